"""Generates wasm/core/unicode_tables.{h,cc} from Debian's unicode-data package.

The tokenizer needs, for every code point: the general category, the full lowercase mapping
(what Python's str.lower() does, including SpecialCasing.txt's unconditional mappings), the
full canonical decomposition (NFD), the canonical combining class and, for NFC (which a cased
tokenizer that keeps accents needs), the primary composites: each pair of code points that
canonical composition joins into one. The tables state the
Unicode version they were built from; Hugging Face's slow BertTokenizer on Python 3.12 uses
Unicode 15.0, which is what Debian 12's unicode-data ships.

The script also checks the assumptions the tokenizer's pipeline rests on (see
wasm/core/tokenizer.cc), and the lowercase table against the running Python's own str.lower()
applied to one character at a time (as transformers applies it) on every code point that both
Unicode versions categorise alike; it refuses to write tables if either check fails.
(str.lower() on a whole word also applies SpecialCasing.txt's conditional Final_Sigma rule;
transformers never lets it, so the table has no conditional mappings. The C++ test
Unicode.LowercaseEqualsPythonForEveryCodePoint checks the generated table in the same way.)

usage: /usr/bin/python3 -m scripts.unicode.gen_unicode_tables [UCD_DIR] [OUT_DIR]
  (from the repository root; defaults: /usr/share/unicode and the repository's wasm/core)
"""
import os
import re
import sys
import unicodedata

UCD = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/unicode"
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "wasm", "core")

# Order fixes the numeric values of attn::unicode::Category; keep in sync with nothing else:
# the enum in unicode_tables.h is generated from this list.
CATEGORIES = ["Cn", "Cc", "Cf", "Co", "Cs", "Ll", "Lm", "Lo", "Lt", "Lu", "Mc", "Me", "Mn",
              "Nd", "Nl", "No", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "Sc", "Sk", "Sm",
              "So", "Zl", "Zp", "Zs"]
MAX_CP = 0x110000
BLOCK = 128  # code points per second-stage block of the category table

# Hangul syllables decompose algorithmically (Unicode 15.0, section 3.12).
S_BASE, L_BASE, V_BASE, T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
L_COUNT, V_COUNT, T_COUNT = 19, 21, 28
S_COUNT = L_COUNT * V_COUNT * T_COUNT


def read_version():
    with open(os.path.join(UCD, "ReadMe.txt"), encoding="utf-8") as f:
        m = re.search(r"for Version (\d+\.\d+\.\d+) of the Unicode Standard", f.read())
    if not m:
        sys.exit("cannot find the Unicode version in ReadMe.txt")
    return m.group(1)


def read_unicode_data():
    category = ["Cn"] * MAX_CP
    ccc = [0] * MAX_CP
    bidi = [""] * MAX_CP
    decomposition = {}
    simple_lower = {}
    first = None
    with open(os.path.join(UCD, "UnicodeData.txt"), encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(";")
            cp = int(fields[0], 16)
            name, gc = fields[1], fields[2]
            if name.endswith(", First>"):
                first = cp
                continue
            lo = first if name.endswith(", Last>") else cp
            first = None
            for c in range(lo, cp + 1):
                category[c] = gc
                ccc[c] = int(fields[3])
                bidi[c] = fields[4]
            if fields[5] and not fields[5].startswith("<"):
                decomposition[cp] = [int(x, 16) for x in fields[5].split()]
            if fields[13]:
                simple_lower[cp] = int(fields[13], 16)
    return category, ccc, bidi, decomposition, simple_lower


def ucd_data_lines(filename):
    """The data lines of a UCD file, comments and blank lines left out."""
    with open(os.path.join(UCD, filename), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                yield line


def read_special_lowercase():
    """Unconditional full lowercase mappings (those without a condition list)."""
    out = {}
    for line in ucd_data_lines("SpecialCasing.txt"):
        fields = [x.strip() for x in line.split(";")]
        # code; lower; title; upper; [condition_list;]
        if len(fields) > 5 and fields[4]:
            continue
        cp = int(fields[0], 16)
        lower = [int(x, 16) for x in fields[1].split()]
        if lower != [cp]:
            out[cp] = lower
    return out


def full_decomposition(cp, decomposition):
    if S_BASE <= cp < S_BASE + S_COUNT:
        s = cp - S_BASE
        out = [L_BASE + s // (V_COUNT * T_COUNT), V_BASE + (s % (V_COUNT * T_COUNT)) // T_COUNT]
        if s % T_COUNT:
            out.append(T_BASE + s % T_COUNT)
        return out
    if cp not in decomposition:
        return [cp]
    out = []
    for c in decomposition[cp]:
        out.extend(full_decomposition(c, decomposition))
    return out


def read_composition_exclusions():
    return {int(line, 16) for line in ucd_data_lines("CompositionExclusions.txt")}


def primary_composites(decomposition, ccc, exclusions):
    """(first, second, composite) for every canonical decomposition of two code points that
    canonical composition undoes (UAX #15: not in CompositionExclusions.txt, and neither the
    composite nor its first part a non-starter), sorted by (first, second). Hangul syllables
    compose algorithmically and are not listed."""
    rows = []
    for cp, parts in decomposition.items():
        if len(parts) != 2 or cp in exclusions or ccc[cp] != 0 or ccc[parts[0]] != 0:
            continue
        rows.append((parts[0], parts[1], cp))
    return sorted(rows)


def check_composites_against_python(category, decomposition, composites):
    """Every listed pair composes under the running Python's NFC, and every other two-part
    canonical decomposition does not come back from NFC, on the code points both Unicode
    versions categorise alike; exits otherwise."""
    listed = {cp for _, _, cp in composites}
    problems = []
    compared = 0
    for cp, parts in decomposition.items():
        if len(parts) != 2 or any(unicodedata.category(chr(c)) != category[c] for c in [cp] + parts):
            continue
        compared += 1
        back = unicodedata.normalize("NFC", chr(cp)) == chr(cp)
        if back != (cp in listed):
            problems.append("U+%04X: table %s, Python's NFC %s" % (
                cp, "composes it" if cp in listed else "does not", "keeps it" if back else "does not"))
    if problems:
        sys.exit("composition table differs from Python's NFC:\n  " + "\n  ".join(problems[:20]))
    return compared


def check_pipeline_assumptions(category, bidi, lower, nfd, decomposition):
    """The tokenizer skips Python's NFC step and lowercases each code point once; both are
    exact only if these hold (see the comment at the top of wasm/core/tokenizer.cc)."""
    def low(c):
        return lower.get(c, [c])

    def is_c(c):
        return category[c].startswith("C")

    def py_space(c):  # Python's str.isspace()
        return bidi[c] in ("WS", "B", "S") or category[c] == "Zs"

    problems = []
    for c in range(MAX_CP):
        if is_c(c) or py_space(c):
            continue
        if any(low(x) != [x] for x in low(c)):
            problems.append("lowercase of U+%04X is not lowercase-stable" % c)
        for x in low(c) + nfd(c):
            if x != c and (is_c(x) or py_space(x)):
                problems.append("U+%04X maps to control or space U+%04X" % (c, x))
        # A lowercase-stable character decomposes into lowercase-stable characters...
        if low(c) == [c] and any(low(x) != [x] for x in nfd(c)):
            problems.append("NFD of lowercase-stable U+%04X has a cased part" % c)
        # ...and NFC never composes lowercase-stable parts into a character lower() changes.
        if c in decomposition and len(decomposition[c]) == 2 and low(c) != [c]:
            if all(low(x) == [x] for x in nfd(c)):
                problems.append("U+%04X composes from lowercase-stable parts" % c)
    if problems:
        sys.exit("pipeline assumptions broken:\n  " + "\n  ".join(problems[:20]))


def check_against_python(category, lower):
    """Returns (code points compared, code points skipped because the running Python's Unicode
    version categorises them differently); exits on any mapping that differs."""
    compared = skipped = 0
    problems = []
    for c in range(MAX_CP):
        if unicodedata.category(chr(c)) != category[c]:
            skipped += 1
            continue
        compared += 1
        python = [ord(x) for x in chr(c).lower()]
        if python != lower.get(c, [c]):
            problems.append("U+%04X: table %s, Python %s" % (
                c, " ".join("%04X" % x for x in lower.get(c, [c])),
                " ".join("%04X" % x for x in python)))
    if problems:
        sys.exit("lowercase table differs from Python %s's str.lower() (Unicode %s):\n  %s" % (
            sys.version.split()[0], unicodedata.unidata_version, "\n  ".join(problems[:20])))
    return compared, skipped


def c_array(name, ctype, values, per_line):
    lines = []
    for i in range(0, len(values), per_line):
        lines.append("    " + ", ".join(values[i:i + per_line]) + ",")
    return "const %s %s[%d] = {\n%s\n};\n" % (ctype, name, len(values), "\n".join(lines))


def main():
    version = read_version()
    category, ccc, bidi, decomposition, simple_lower = read_unicode_data()
    special = read_special_lowercase()

    lower = {cp: [lo] for cp, lo in simple_lower.items() if lo != cp}
    lower.update(special)

    nfd_cache = {}

    def nfd(c):
        if c not in nfd_cache:
            nfd_cache[c] = full_decomposition(c, decomposition)
        return nfd_cache[c]

    check_pipeline_assumptions(category, bidi, lower, nfd, decomposition)
    compared, skipped = check_against_python(category, lower)
    composites = primary_composites(decomposition, ccc, read_composition_exclusions())
    composites_compared = check_composites_against_python(category, decomposition, composites)

    # Two-stage category table: stage1[cp / BLOCK] selects a deduplicated block in stage2.
    cat_index = {c: i for i, c in enumerate(CATEGORIES)}
    blocks, block_ids, stage1 = [], {}, []
    for b in range(MAX_CP // BLOCK):
        block = tuple(cat_index[category[c]] for c in range(b * BLOCK, (b + 1) * BLOCK))
        if block not in block_ids:
            block_ids[block] = len(blocks)
            blocks.append(block)
        stage1.append(block_ids[block])
    stage2 = [v for block in blocks for v in block]

    lower_rows = []
    for cp in sorted(lower):
        m = lower[cp]
        assert 1 <= len(m) <= 3
        lower_rows.append("{0x%04X, %d, {%s}}" % (
            cp, len(m), ", ".join("0x%04X" % x for x in m + [0] * (3 - len(m)))))

    decomposition_rows, pool = [], []
    for cp in sorted(decomposition):
        full = nfd(cp)
        decomposition_rows.append("{0x%04X, %d, %d}" % (cp, len(pool), len(full)))
        pool.extend(full)
    assert len(pool) < 65536
    max_decomposition = max(3, max(len(nfd(cp)) for cp in decomposition))

    ccc_rows = []  # runs of equal non-zero class: first, last, class
    run = None
    for c in range(MAX_CP):
        if run and ccc[c] == run[2] and c == run[1] + 1:
            run[1] = c
            continue
        if run:
            ccc_rows.append(run)
        run = [c, c, ccc[c]] if ccc[c] else None
    if run:
        ccc_rows.append(run)

    header = """// GENERATED by scripts/unicode/gen_unicode_tables.py from the Unicode Character Database {v}
// (Debian package unicode-data, /usr/share/unicode). Do not edit; re-run the script.
#pragma once

#include <cstdint>

namespace attn::unicode {{

constexpr const char* kUnicodeVersion = "{v}";

// General category, numbered as in the generator's CATEGORIES list.
enum class Category : uint8_t {{
{enum}
}};

struct LowercaseMapping {{
  char32_t code_point;
  uint8_t length;       // 1..3 code points
  char32_t mapping[3];
}};

struct Decomposition {{
  char32_t code_point;
  uint16_t offset;      // into kDecompositionPool
  uint8_t length;
}};

struct Composition {{
  char32_t first, second;  // a starter and the code point canonical composition joins to it
  char32_t composite;
}};

struct CombiningClassRun {{
  char32_t first, last;
  uint8_t combining_class;
}};

constexpr int kCategoryBlockShift = {shift};
constexpr int kMaxDecompositionLength = {maxd};  // Hangul syllables: 3
extern const uint16_t kCategoryStage1[{n1}];   // (0x110000 >> shift) block indices
extern const uint8_t kCategoryStage2[{n2}];    // (blocks * {block}) categories
extern const LowercaseMapping kLowercase[{nl}];  // sorted by code_point; Python str.lower()
extern const Decomposition kDecompositions[{nd}];  // sorted; full canonical, without Hangul
extern const char32_t kDecompositionPool[{np}];
extern const CombiningClassRun kCombiningClasses[{nc}];  // sorted, non-zero classes only
extern const Composition kCompositions[{nk}];  // sorted by (first, second); without Hangul

}}  // namespace attn::unicode
""".format(v=version, enum="\n".join("  %s = %d," % (c, i) for i, c in enumerate(CATEGORIES)),
           shift=BLOCK.bit_length() - 1, n1=len(stage1), n2=len(stage2), block=BLOCK,
           maxd=max_decomposition,
           nl=len(lower_rows), nd=len(decomposition_rows), np=len(pool), nc=len(ccc_rows),
           nk=len(composites))

    body = ["// GENERATED by scripts/unicode/gen_unicode_tables.py from the Unicode Character Database %s.\n"
            "// Do not edit; re-run the script.\n#include \"core/unicode_tables.h\"\n\n"
            "namespace attn::unicode {\n" % version]
    body.append(c_array("kCategoryStage1", "uint16_t", [str(x) for x in stage1], 24))
    body.append(c_array("kCategoryStage2", "uint8_t", [str(x) for x in stage2], 32))
    body.append(c_array("kLowercase", "LowercaseMapping", lower_rows, 3))
    body.append(c_array("kDecompositions", "Decomposition", decomposition_rows, 5))
    body.append(c_array("kDecompositionPool", "char32_t", ["0x%04X" % x for x in pool], 10))
    body.append(c_array("kCombiningClasses", "CombiningClassRun",
                        ["{0x%04X, 0x%04X, %d}" % tuple(r) for r in ccc_rows], 4))
    body.append(c_array("kCompositions", "Composition",
                        ["{0x%04X, 0x%04X, 0x%04X}" % r for r in composites], 4))
    body.append("}  // namespace attn::unicode\n")

    with open(os.path.join(OUT, "unicode_tables.h"), "w", encoding="utf-8") as f:
        f.write(header)
    with open(os.path.join(OUT, "unicode_tables.cc"), "w", encoding="utf-8") as f:
        f.write("\n".join(body))
    print("Unicode %s: %d category blocks, %d lowercase, %d decompositions, %d ccc runs, "
          "%d compositions" % (version, len(blocks), len(lower_rows), len(decomposition_rows),
                               len(ccc_rows), len(composites)))
    print("compositions agree with Python's NFC on all %d two-part decompositions both "
          "categorise alike" % composites_compared)
    print("lowercase equals Python %s's str.lower() (Unicode %s) on all %d code points both "
          "categorise alike (%d skipped)" % (sys.version.split()[0], unicodedata.unidata_version,
                                             compared, skipped))


if __name__ == "__main__":
    main()
