"""Builds the English training corpus for the default model from installed Debian packages.

Usage:
  python3 -m scripts.training.build_corpus text [--out corpus]  # clean, de-duplicate, split
  python3 -m scripts.training.build_corpus ids  [--out corpus]  # tokenise with attention-cli

`text --sources permissive` leaves out the GPL-2.0-or-later sources (dict-gcide,
debian-reference-en), so that a model trained on the result need not be offered under the GPL
(model_data/README.md, "Licence"); `--sources wordnet-base,fortunes` takes the packages named.

`text` writes train.txt and heldout.txt (one sentence per line, a blank line between documents),
the source of every document (train.docs, heldout.docs) and manifest.json. `ids` runs the project's
own tokenizer over both files and writes, per split, <split>_ids.npy (uint16 token ids without
[CLS]/[SEP]), <split>_sentences.npy (offset of each sentence into the ids, plus the end) and
<split>_documents.npy (index of each document's first sentence, plus the end), then adds token
counts to the manifest.

Sources made of many tiny items (dictionary entries, WordNet synsets, fortunes) are grouped into
"pages" of consecutive items so that a training sequence can hold several sentences; a page is the
unit that is held out, and a headword's entries never straddle two pages.
"""
import argparse
import gzip
import hashlib
import html
import json
import os
import random
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = 1234
HELDOUT_FRACTION = 0.02
PAGE_CHARS = 2500  # target size of a page of small items, about 500-700 tokens

LICENCES = {
    "dict-gcide": "GPL-2+ (GCIDE; derived from the public-domain 1913 Webster and WordNet 1.5)",
    "wordnet-base": "WordNet 3.0 licence (permissive, BSD-like; Princeton University)",
    "fortunes": "BSD (fortune-mod collection; quotations by their authors)",
    "bible-kjv-text": "Public domain (King James Version text)",
    "debian-reference-en": "GPL-2+",
    "nodejs": "MIT (Node.js API documentation)",
}
# The sources under the GPL: a model trained on them is offered under GPL-2.0-or-later
# (model_data/README.md, "Licence"); `text --sources permissive` leaves them out.
GPL_SOURCES = {"dict-gcide", "debian-reference-en"}


def package_version(package):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


# ---------------------------------------------------------------------------------------------
# Sentence splitting and filtering shared by all sources.

ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "prof", "sr", "jr", "vs", "etc", "e.g", "i.e",
                 "cf", "viz", "no", "fig", "vol", "ch", "esp", "approx", "lit", "obs", "ed",
                 "co", "corp", "inc", "ltd", "gen", "col", "capt", "rev", "hon", "eng", "fr",
                 "lat", "gr", "pl", "sing", "pp", "p", "ibid", "op", "ca", "u.s", "a.d", "b.c"}
SPLIT_CANDIDATE = re.compile(r"([.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(paragraph):
    """Splits a paragraph at sentence ends, not after common abbreviations or initials."""
    sentences, start = [], 0
    for m in SPLIT_CANDIDATE.finditer(paragraph):
        if m.group(1) == ".":
            word = paragraph[start:m.start()].split()[-1:] or [""]
            token = word[0].lower().strip("(\"'")
            if token in ABBREVIATIONS or len(token) == 1:
                continue
        sentences.append(paragraph[start:m.end(2)].strip())
        start = m.end()
    sentences.append(paragraph[start:].strip())
    return [s for s in sentences if s]


def normalise(text):
    return re.sub(r"\s+", " ", text).strip()


def is_prose(sentence):
    """Keeps sentences of at least three words that are mostly letters (drops tables, code)."""
    words = sentence.split()
    if len(words) < 3 or len(sentence) > 1000:
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.6 * len(sentence.replace(" ", ""))


def paragraphs_to_sentences(paragraphs):
    out = []
    for p in paragraphs:
        for s in split_sentences(normalise(p)):
            if is_prose(s):
                out.append(s)
    return out


def pages(items, key=lambda item: None):
    """Groups consecutive items (each a list of sentences) into pages of about PAGE_CHARS.

    Items with equal key (for example one headword's entries) stay on one page.
    """
    page, size, last_key = [], 0, object()
    for item in items:
        k = key(item)
        if page and size >= PAGE_CHARS and k != last_key:
            yield page
            page, size = [], 0
        page.extend(item[1])
        size += sum(len(s) for s in item[1])
        last_key = k
    if page:
        yield page


# ---------------------------------------------------------------------------------------------
# dict-gcide: 1913 Webster and WordNet definitions, with dictd markup.

GCIDE_LETTER = {"ae": "ae", "oe": "oe", "oo^": "oo", "th": "th", "eth": "th", "thorn": "th",
                "ng": "ng", "add": "a", "udd": "u", "asl": "a", "imac": "i"}
GCIDE_ACCENT = re.compile(r"\[(?:([a-zA-Z])(?:\^|mac|um|sl|dd|dot|breve|ced|til|acute|grave)"
                          r"|['~\"`^.]([a-zA-Z]))\]")
GCIDE_ENTITY = re.compile(r"\[([a-z.^'`~\"]{1,8})\]")
GCIDE_PRONUNCIATION = re.compile(r"\\[^\\\n]*\\")
GCIDE_ATTRIBUTION = re.compile(r"--\s*[A-Z][^\n]*")
GCIDE_SENSE_NUMBER = re.compile(r"(?m)^\s*(?:\d+\.|\([a-z]\))\s+")


def gcide_entry_sentences(entry):
    text = GCIDE_ACCENT.sub(lambda m: m.group(1) or m.group(2), entry)

    def entity(m):
        name = m.group(1)
        # Unknown entities (root signs, Greek letters, degree marks) cannot be spelled in plain
        # text; a sentinel marks the sentence for dropping.
        return GCIDE_LETTER.get(name, "\x00")
    text = GCIDE_ENTITY.sub(entity, text)
    text = GCIDE_PRONUNCIATION.sub("", text)
    # Etymologies, sources ([1913 Webster]) and usage labels ([Obs.]) are all in brackets.
    for _ in range(2):
        text = re.sub(r"\[[^\[\]]*\]", "", text)
    text = GCIDE_ATTRIBUTION.sub("", text)
    text = text.replace("{", "").replace("}", "")
    lines = text.split("\n")
    body = "\n".join(lines[1:])  # the first line is the headword, part of speech and inflections
    body = GCIDE_SENSE_NUMBER.sub("\n\n", body)
    paragraphs = []
    for p in re.split(r"\n\s*\n", body):
        p = p.strip()
        if not p or p.startswith(("Syn:", "Note:")) and len(p) < 8:
            continue
        if p.startswith("Syn:"):
            continue
        p = re.sub(r"^(?:Note|Usage):\s*", "", p)
        paragraphs.append(p)
    return [s for s in paragraphs_to_sentences(paragraphs) if "\x00" not in s]


def read_gcide():
    index = []
    with open("/usr/share/dictd/gcide.index", encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or parts[0].startswith("00-database"):
                continue
            index.append((b64(parts[1]), b64(parts[2]), parts[0].lower()))
    data = gzip.open("/usr/share/dictd/gcide.dict.dz").read()
    seen, entries = set(), []
    for offset, length, headword in sorted(index):
        if (offset, length) in seen:
            continue
        seen.add((offset, length))
        entry = data[offset:offset + length].decode("utf-8", errors="replace")
        entries.append((headword, gcide_entry_sentences(entry)))
    return list(pages(entries, key=lambda item: item[0]))


def b64(text):
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    value = 0
    for ch in text:
        value = value * 64 + alphabet.index(ch)
    return value


# ---------------------------------------------------------------------------------------------
# wordnet-base: glosses and quoted example sentences.

def read_wordnet():
    documents = []
    for pos in ("noun", "verb", "adj", "adv"):
        items = []
        with open(f"/usr/share/wordnet/data.{pos}", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("  ") or "|" not in line:
                    continue  # licence header
                fields = line.split()
                lex_file = fields[1]
                gloss = line.split("|", 1)[1].strip()
                parts = [p.strip() for p in gloss.split(";") if p.strip()]
                sentences = []
                definition = [p for p in parts if not p.startswith('"')]
                if definition:
                    text = "; ".join(definition)
                    sentences.append(text[0].upper() + text[1:] + ("" if text.endswith(".") else "."))
                for p in parts:
                    if p.startswith('"'):
                        sentences.append(p.strip('"').strip())
                sentences = [s for s in (normalise(s) for s in sentences) if is_prose(s)]
                items.append((lex_file, sentences))
        # Synsets come grouped by lexicographer file (noun.animal, noun.food ...); a page never
        # mixes two files.
        for lex_file in sorted(set(item[0] for item in items)):
            group = [item for item in items if item[0] == lex_file]
            documents.extend(pages(group, key=id))
    return documents


# ---------------------------------------------------------------------------------------------
# fortunes: quotations separated by "%" lines; offensive files are not installed by this package.

def read_fortunes():
    root = "/usr/share/games/fortunes"
    items = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if "." in name or os.path.islink(path) or not os.path.isfile(path):
            continue
        if name in ("art", "ascii-art"):
            continue  # pictures made of characters
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for fortune in text.split("\n%\n"):
            lines = [l for l in fortune.split("\n") if not re.match(r"^\s*(--|-- |~~)", l.strip())]
            # Attributions ("-- Mark Twain") and dialogue markers are dropped; indented verse is kept.
            paragraphs = re.split(r"\n\s*\n", "\n".join(lines))
            sentences = paragraphs_to_sentences(paragraphs)
            if sentences:
                items.append((name, sentences))
    return list(pages(items, key=id))


# ---------------------------------------------------------------------------------------------
# bible-kjv-text: the King James Version, one document per chapter (read with bible-kjv's reader).

def read_bible():
    out = subprocess.run(["bible", "-l0", "Gen1:1-Rev22:21"], check=True, capture_output=True,
                         text=True).stdout
    documents, verses = [], []
    for line in out.split("\n"):
        m = re.match(r"^\s*\d+\s+(.*)$", line)
        if m:
            verses.append(m.group(1))
        elif line.strip():  # a chapter heading such as "Genesis 1"
            if verses:
                documents.append(paragraphs_to_sentences(verses))
            verses = []
    if verses:
        documents.append(paragraphs_to_sentences(verses))
    return documents


# ---------------------------------------------------------------------------------------------
# debian-reference-en: HTML chapters; paragraphs and list items only (no code, no tables).

def html_paragraphs(markup):
    markup = re.sub(r"(?is)<(pre|table|script|style|code)[^>]*>.*?</\1>", " ", markup)
    paragraphs = []
    for m in re.finditer(r"(?is)<(p|li|dd)\b[^>]*>(.*?)</\1>", markup):
        text = html.unescape(re.sub(r"<[^>]+>", " ", m.group(2)))
        paragraphs.append(text)
    return paragraphs


def read_folder(root, suffix, paragraphs):
    """One document per file of root ending in suffix, its prose found by paragraphs(text)."""
    documents = []
    for name in sorted(os.listdir(root)):
        if name.endswith(suffix):
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                documents.append(paragraphs_to_sentences(paragraphs(f.read())))
    return documents


def read_debian_reference():
    return read_folder("/usr/share/debian-reference", ".en.html", html_paragraphs)


# ---------------------------------------------------------------------------------------------
# nodejs-doc: the Node.js API reference in Markdown; prose paragraphs only.

def markdown_paragraphs(text):
    text = re.sub(r"(?s)```.*?```", "\n\n", text)
    text = re.sub(r"(?s)<!--.*?-->", "", text)
    paragraphs = []
    for p in re.split(r"\n\s*\n", text):
        p = p.strip()
        if not p or p.startswith(("#", "|", "    ", ">", "[")):
            continue
        p = re.sub(r"^\s*[*-]\s+", "", p, flags=re.M)
        p = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", p)  # links keep their text
        p = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", p)
        p = re.sub(r"`([^`]*)`", r"\1", p)
        p = re.sub(r"[*_]{1,2}([^*_]+)[*_]{1,2}", r"\1", p)
        p = re.sub(r"<[^>]+>", "", p)
        paragraphs.append(p)
    return paragraphs


def read_nodejs_doc():
    return read_folder("/usr/share/doc/nodejs/api", ".md", markdown_paragraphs)


SOURCES = [  # (package, reader, path that must exist)
    ("dict-gcide", read_gcide, "/usr/share/dictd/gcide.dict.dz"),
    ("wordnet-base", read_wordnet, "/usr/share/wordnet/data.noun"),
    ("fortunes", read_fortunes, "/usr/share/games/fortunes/fortunes"),
    ("bible-kjv-text", read_bible, "/usr/lib/bible.data"),
    ("debian-reference-en", read_debian_reference, "/usr/share/debian-reference"),
    ("nodejs", read_nodejs_doc, "/usr/share/doc/nodejs/api"),
]


def select_sources(spec):
    """The packages `--sources` names: all, permissive (all but GPL_SOURCES) or a list."""
    names = [package for package, _, _ in SOURCES]
    if spec == "all":
        return names
    if spec == "permissive":
        return [n for n in names if n not in GPL_SOURCES]
    chosen = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in names]
    if unknown or not chosen:
        raise SystemExit(f"build_corpus: --sources {spec!r}: unknown source(s) "
                         f"{', '.join(unknown) or '(none given)'}; known: all, permissive, "
                         f"{', '.join(names)}")
    return [n for n in names if n in chosen]


def build_text(out_dir, sources="all"):
    os.makedirs(out_dir, exist_ok=True)
    seen = set()
    documents = []  # (source, [sentences])
    selected = select_sources(sources)
    manifest = {"seed": SEED, "heldout_fraction": HELDOUT_FRACTION, "sources": []}
    if sources != "all":  # the default corpus's manifest stays as it was (its sha256 is on record)
        manifest["selected_sources"] = sources
    for package, reader, path in SOURCES:
        if package not in selected:
            continue
        if not os.path.exists(path):
            print(f"build_corpus: {package} is not installed ({path} missing); run "
                  f"scripts/setup.sh --train", file=sys.stderr)
            continue
        entry = {"package": package, "version": package_version(package),
                 "licence": LICENCES[package], "documents": 0, "sentences": 0, "words": 0,
                 "duplicates_dropped": 0}
        if package == "bible-kjv-text":
            entry["reader"] = f"bible-kjv {package_version('bible-kjv')}"
        for doc in reader():
            kept = []
            for s in doc:
                key = re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()
                if key in seen:
                    entry["duplicates_dropped"] += 1
                    continue
                seen.add(key)
                kept.append(s)
            if kept:
                documents.append((package, kept))
                entry["documents"] += 1
                entry["sentences"] += len(kept)
                entry["words"] += sum(len(s.split()) for s in kept)
        manifest["sources"].append(entry)
        print(f"build_corpus: {package}: {entry['documents']} documents, {entry['sentences']} "
              f"sentences, {entry['words']} words", file=sys.stderr)

    order = list(range(len(documents)))
    random.Random(SEED).shuffle(order)
    n_heldout = max(1, round(HELDOUT_FRACTION * len(documents)))
    heldout = set(order[:n_heldout])
    splits = {"train": [], "heldout": []}
    for i, doc in enumerate(documents):  # keep the sources' own order within each split
        splits["heldout" if i in heldout else "train"].append(doc)
    for split, docs in splits.items():
        with open(os.path.join(out_dir, f"{split}.txt"), "w", encoding="utf-8") as f:
            f.write("\n\n".join("\n".join(sents) for _, sents in docs) + "\n")
        with open(os.path.join(out_dir, f"{split}.docs"), "w", encoding="utf-8") as f:
            f.write("".join(src + "\n" for src, _ in docs))
        manifest[split] = {"documents": len(docs),
                           "sentences": sum(len(s) for _, s in docs),
                           "words": sum(len(x.split()) for _, s in docs for x in s)}
    write_manifest(out_dir, manifest)


def write_manifest(out_dir, manifest):
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


def build_ids(out_dir, cli, vocab):
    import numpy as np
    with open(os.path.join(out_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    per_source = {}
    for split in ("train", "heldout"):
        with open(os.path.join(out_dir, f"{split}.txt"), encoding="utf-8") as f:
            lines = f.read().rstrip("\n").split("\n")
        with open(os.path.join(out_dir, f"{split}.docs"), encoding="utf-8") as f:
            doc_sources = f.read().split()
        # The CLI tokenises one text per line; blank lines (document ends) are not sent.
        sentences = [l for l in lines if l]
        result = subprocess.run([cli, "tokenize", "--vocab", vocab, "--lines"],
                                input="\n".join(sentences) + "\n", capture_output=True,
                                text=True, check=True)
        rows = result.stdout.rstrip("\n").split("\n")
        if len(rows) != len(sentences):
            raise SystemExit(f"build_corpus: the tokenizer gave {len(rows)} lines for "
                             f"{len(sentences)} sentences")
        ids, sentence_offsets, document_offsets = [], [0], [0]
        row = 0
        doc = 0
        for line in lines + [""]:
            if not line:
                if row != document_offsets[-1]:
                    document_offsets.append(row)
                    source = doc_sources[doc]
                    per_source[source] = per_source.get(source, 0) + \
                        sentence_offsets[-1] - sentence_offsets[document_offsets[-2]]
                    doc += 1
                continue
            values = [int(v) for v in rows[row].split()]
            if values[:1] != [101] or values[-1:] != [102]:
                raise SystemExit(f"build_corpus: line {row} does not start with [CLS] and end "
                                 f"with [SEP]: {rows[row][:80]}")
            ids.extend(values[1:-1])
            sentence_offsets.append(len(ids))
            row += 1
        if doc != len(doc_sources):
            raise SystemExit(f"build_corpus: {doc} documents in {split}.txt but "
                             f"{len(doc_sources)} in {split}.docs")
        np.save(os.path.join(out_dir, f"{split}_ids.npy"), np.asarray(ids, dtype=np.uint16))
        np.save(os.path.join(out_dir, f"{split}_sentences.npy"),
                np.asarray(sentence_offsets, dtype=np.int64))
        np.save(os.path.join(out_dir, f"{split}_documents.npy"),
                np.asarray(document_offsets, dtype=np.int64))
        manifest[split]["tokens"] = len(ids)
        print(f"build_corpus: {split}: {len(ids)} tokens in {row} sentences, {doc} documents",
              file=sys.stderr)
    for entry in manifest["sources"]:
        entry["tokens"] = per_source.get(entry["package"], 0)
    with open(vocab, "rb") as f:
        manifest["vocab_sha256"] = hashlib.sha256(f.read()).hexdigest()
    write_manifest(out_dir, manifest)


def main():
    parser = argparse.ArgumentParser(prog="python3 -m scripts.training.build_corpus",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=["text", "ids"])
    parser.add_argument("--out", default=os.path.join(ROOT, "corpus"))
    parser.add_argument("--cli", default=os.path.join(ROOT, "build/native/attention-cli"))
    parser.add_argument("--vocab", default=os.path.join(ROOT, "model_data/vocab.txt"))
    parser.add_argument("--sources", default="all",
                        help="text stage: all (default), permissive (without the GPL sources "
                             "dict-gcide and debian-reference-en), or packages separated by commas")
    args = parser.parse_args()
    if args.stage == "text":
        build_text(args.out, args.sources)
    else:
        build_ids(args.out, args.cli, args.vocab)


if __name__ == "__main__":
    main()
