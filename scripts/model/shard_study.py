"""Which rows-per-shard R for the split model (model_data/README.md, "Split layout for the page"):
bytes and requests a reader's browser makes, measured over the held-out sentence sets.

    python3 -m scripts.model.shard_study [--model model_data/explainer-mini.compact.attn]
        [--sentences FILE ...] [--rows 16,32,64,128,256,512,1024] [--cli build/native/attention-cli]
        [--example TEXT] [--json OUT.json]

Every text is tokenized by the engine's tokenizer (`attention-cli tokenize --lines`, [CLS] and
[SEP] included); token id t needs shard floor(t / R). For each R the model is split for real
(scripts/model/split_model.py) and each shard's exact size is used. Reported per R:
- core bytes, shard count, shard bytes;
- first load: the core plus the shards of the page's precomputed example (the first preset
  sentence, which the page fetches with the core), and the requests for those shards;
- the first sentence of a set typed into a cold cache (shards only, no example);
- the set's sentences typed one after another, the cache starting with the example's shards:
  bytes fetched per sentence (median, 95th percentile by nearest rank), the share of sentences
  that needed no fetch, and requests and bytes over the whole set.
"""

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys

from scripts.model import split_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_MODEL = os.path.join(ROOT, "model_data", "explainer-mini.compact.attn")
DEFAULT_SENTENCES = [os.path.join(ROOT, "tests", "fixtures", "precision_sentences_validation.txt"),
                     os.path.join(ROOT, "tests", "fixtures", "precision_sentences.txt")]
DEFAULT_CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
VOCAB = os.path.join(ROOT, "model_data", "vocab.txt")
DEFAULT_ROWS = (16, 32, 64, 128, 256, 512, 1024)
# HTTP/1.1 browsers open this many connections per origin: requests beyond it wait a round trip.
PARALLEL_CONNECTIONS = 6
# The time model of the "ms" columns: the throttled 20 Mbit/s and a round trip of a
# distant static host (0 on localhost, where only the bytes count).
BYTES_PER_SECOND = 20e6 / 8
ROUND_TRIP_S = 0.05


def fetch_ms(nbytes, requests):
    """Modelled time of fetching `requests` files of `nbytes` in all, in parallel: the bytes at
    BYTES_PER_SECOND plus one round trip per wave of PARALLEL_CONNECTIONS requests."""
    waves = -(-requests // PARALLEL_CONNECTIONS)
    return 1000 * (nbytes / BYTES_PER_SECOND + waves * ROUND_TRIP_S)


def first_preset():
    """The page's first preset sentence (web/content.js PRESETS[0]), the precomputed example."""
    with open(os.path.join(ROOT, "web", "content.js"), encoding="utf-8") as f:
        match = re.search(r"PRESETS\s*=\s*(?:Object\.freeze\(\s*)?\[\s*'((?:[^'\\]|\\.)*)'", f.read())
    if not match:
        raise SystemExit("shard_study: cannot find PRESETS in web/content.js; pass --example TEXT")
    return match.group(1).replace("\\'", "'")


def tokenize(cli, texts):
    """Token ids of each text ([CLS] ... [SEP]) by the engine's tokenizer."""
    if not os.access(cli, os.X_OK):
        raise SystemExit(f"shard_study: {cli} is not built; build it with scripts/build.sh native")
    out = subprocess.run([cli, "tokenize", "--vocab", VOCAB, "--lines"],
                         input="".join(t + "\n" for t in texts), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    if len(out) != len(texts):
        raise SystemExit(f"shard_study: {len(texts)} texts gave {len(out)} lines of ids")
    return [[int(x) for x in line.split()] for line in out]


def nearest_rank(values, share):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def study(model_bytes, example_ids, sets, rows_list):
    """{R: {...}} of the measures above; sets: {label: [ids per sentence]}."""
    results = {}
    for rows in rows_list:
        core, shards = split_model.split_bytes(model_bytes, rows)
        sizes = [len(s) for s in shards]

        def shards_of(ids):
            return {t // rows for t in ids}

        example = shards_of(example_ids)
        entry = {
            "rows_per_shard": rows,
            "core_bytes": len(core),
            "shards": len(shards),
            "shard_bytes_median": int(statistics.median(sizes)),
            "example_shards": len(example),
            "example_shard_bytes": sum(sizes[k] for k in example),
            "first_load_bytes": len(core) + sum(sizes[k] for k in example),
            # The masked-LM head needs every row: the shards the example did not bring.
            "rest_requests": len(shards) - len(example),
            "rest_ms": fetch_ms(sum(sizes) - sum(sizes[k] for k in example),
                                len(shards) - len(example)),
            "sets": {},
        }
        for label, sentences in sets.items():
            first = shards_of(sentences[0])
            cache = set(example)
            per_sentence, requests, times = [], [], []
            for ids in sentences:
                missing = shards_of(ids) - cache
                cache |= missing
                per_sentence.append(sum(sizes[k] for k in missing))
                requests.append(len(missing))
                times.append(fetch_ms(per_sentence[-1], requests[-1]))
            entry["sets"][label] = {
                "sentences": len(sentences),
                "first_cold_bytes": sum(sizes[k] for k in first),
                "first_cold_requests": len(first),
                "median_bytes": statistics.median(per_sentence),
                "p95_bytes": nearest_rank(per_sentence, 0.95),
                "p95_requests": nearest_rank(requests, 0.95),
                "max_requests": max(requests),
                "p95_ms": nearest_rank(times, 0.95),
                "no_fetch_share": sum(1 for b in per_sentence if b == 0) / len(per_sentence),
                "requests": sum(requests),
                "total_bytes": sum(per_sentence),
                "cached_shards": len(cache),
            }
        results[rows] = entry
    return results


def kb(n):
    return f"{n / 1000:,.1f}"


def markdown(results, labels, example_text, model_path):
    lines = [f"Model `{os.path.relpath(model_path, ROOT)}`; the example fetched with the core: "
             f"\"{example_text}\". kB = 1000 bytes of shard files (header and payload, no HTTP "
             f"overhead). ms: modelled at {8 * BYTES_PER_SECOND / 1e6:g} Mbit/s with "
             f"{PARALLEL_CONNECTIONS} connections and a {1000 * ROUND_TRIP_S:g} ms round trip "
             f"per wave of {PARALLEL_CONNECTIONS} requests.", "",
             "| R | shards | kB per shard (median) | core kB | first load kB: core + example "
             "(requests) | rest of the table for masked-LM: requests, ms |",
             "|---|---|---|---|---|---|"]
    for rows, r in results.items():
        lines.append(f"| {rows} | {r['shards']:,} | {kb(r['shard_bytes_median'])} | "
                     f"{kb(r['core_bytes'])} | {kb(r['first_load_bytes'])} "
                     f"({r['example_shards']}) | {r['rest_requests']:,}, {r['rest_ms']:,.0f} |")
    for label in labels:
        n = next(iter(results.values()))["sets"][label]["sentences"]
        lines += ["", f"`{label}`, {n} sentences typed one after another (the cache starting "
                  f"with the example's shards; percentiles by nearest rank):", "",
                  "| R | first sentence, cold cache: kB (requests) | per sentence: median kB | "
                  "p95 kB | no fetch | p95 requests (most) | p95 ms | all sentences: requests "
                  "| kB |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for rows, r in results.items():
            s = r["sets"][label]
            lines.append(f"| {rows} | {kb(s['first_cold_bytes'])} ({s['first_cold_requests']}) "
                         f"| {kb(s['median_bytes'])} | {kb(s['p95_bytes'])} | "
                         f"{100 * s['no_fetch_share']:.0f}% | {s['p95_requests']} "
                         f"({s['max_requests']}) | {s['p95_ms']:,.0f} | {s['requests']:,} | "
                         f"{kb(s['total_bytes'])} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m scripts.model.shard_study",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--sentences", nargs="+", default=DEFAULT_SENTENCES)
    parser.add_argument("--rows", default=",".join(map(str, DEFAULT_ROWS)),
                        help="comma-separated rows-per-shard values")
    parser.add_argument("--cli", default=DEFAULT_CLI)
    parser.add_argument("--example", help="the precomputed example's text (default: the first "
                                          "preset of web/content.js)")
    parser.add_argument("--json", help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)

    example_text = args.example or first_preset()
    with open(args.model, "rb") as f:
        model_bytes = f.read()
    sets = {}
    for path in args.sentences:
        with open(path, encoding="utf-8") as f:
            texts = [line.rstrip("\n") for line in f if line.strip()]
        sets[os.path.basename(path)] = tokenize(args.cli, texts)
    example_ids = tokenize(args.cli, [example_text])[0]
    rows_list = [int(x) for x in args.rows.split(",")]
    try:
        results = study(model_bytes, example_ids, sets, rows_list)
    except split_model.SplitError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(markdown(results, list(sets), example_text, args.model))
    print(f"\n(the single file: {len(model_bytes):,} bytes)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"model": os.path.relpath(args.model, ROOT), "example": example_text,
                       "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
