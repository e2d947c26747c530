"""Writes what the running Python's str.lower() does to every code point, for the C++ test
Unicode.LowercaseEqualsPythonForEveryCodePoint (tests/cpp/unicode_test.cc), which runs this at
test time and reads the file back: the expected table is Python's own, never typed by hand.

Each line is "CP<TAB>ALONE<TAB>FINAL", hex code points separated by spaces:
  ALONE  chr(cp).lower(), what transformers' BertTokenizer uses (it lowercases one character at
         a time, see wasm/core/tokenizer.cc);
  FINAL  the lowercase of cp inside "A" + chr(cp), where str.lower()'s conditional Final_Sigma
         rule applies (a cased letter before, none after).
Only code points for which ALONE or FINAL is not cp itself are listed; every other code point
0..10FFFF (surrogates included) lowercases to itself. The first line is a comment naming the
Python and Unicode versions and the number of code points checked.

usage: /usr/bin/python3 -m scripts.unicode.python_casing OUT_FILE   (from the repository root)
"""
import sys
import unicodedata

MAX_CP = 0x110000


def hexes(text):
    return " ".join("%04X" % ord(c) for c in text)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.rsplit("usage: ", 1)[1])
    rows = []
    for cp in range(MAX_CP):
        c = chr(cp)
        alone = c.lower()
        final = ("A" + c).lower()[1:]
        if alone != c or final != c:
            rows.append("%04X\t%s\t%s\n" % (cp, hexes(alone), hexes(final)))
    with open(sys.argv[1], "w", encoding="ascii") as f:
        f.write("# Python %s, Unicode %s: %d code points checked, %d listed\n" % (
            sys.version.split()[0], unicodedata.unidata_version, MAX_CP, len(rows)))
        f.writelines(rows)


if __name__ == "__main__":
    main()
