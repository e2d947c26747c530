"""Where to spend precision: measures candidate precision plans of a model file against its f32
original on a fixed set of held-out sentences, with the C++ engine (attention-cli compare).

    python3 -m scripts.training.precision_study sentences [--count 240] [--offset 0] [--out FILE]
    python3 -m scripts.training.precision_study run REFERENCE.attn [--plans NAME,...]
                                                    [--ship OUT.attn] [--keep DIR]

`sentences` picks the fixed set from corpus/heldout.txt: lines of 5 to 60 tokens ([CLS] and
[SEP] included), evenly spaced through the file. `run` writes every candidate plan's file,
compares each with REFERENCE and prints a markdown table: file bytes; attention max and mean
absolute difference over every layer, head and row; share of rows whose argmax moved; rollout
max difference; masked-LM top-1 agreement at masked positions. --ship copies the smallest file
whose attention max difference meets the bar (1e-3, docs/ARCHITECTURE.md "Fidelity bars") to OUT
(the f32 reference itself and rows that only illustrate a point excepted); --keep keeps all files.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from scripts.model import convert_model, modelfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
SENTENCES = os.path.join(ROOT, "tests", "fixtures", "precision_sentences.txt")
# A second, disjoint set from the same lines (offset by half a step): the shipped plan is checked
# on it too, to see how far a maximum over 240 sentences carries to other sentences.
VALIDATION = os.path.join(ROOT, "tests", "fixtures", "precision_sentences_validation.txt")
# The fidelity bar for the compact (shipped) weights (docs/ARCHITECTURE.md, "Fidelity bars").
ATTENTION_BAR = 1e-3
MIN_TOKENS, MAX_TOKENS = 5, 60


def layer_plan(config, word, layers, tail, position=None):
    """A rans plan: word embeddings at `word` levels per row, the position embeddings at
    `position` (default: as the words), encoder matrices at `layers`. The tensors that no
    attention probability depends on (the last layer's value, attention output and
    feed-forward, the pooler, the masked-LM transform) get `tail` levels: they change only the
    masked-LM predictions, which the table reports. LayerNorm, biases and token types stay f32:
    they are 0.1% of the weights, and an f16 LayerNorm weight alone moves attention by 4e-4."""
    last = f"encoder.layer.{config.num_hidden_layers - 1}."
    return ",".join([
        "*LayerNorm*=f32", "*.bias=f32",
        f"{last}attention.self.value.weight=rans:row:{tail}",
        f"{last}attention.output.dense.weight=rans:row:{tail}",
        f"{last}intermediate.dense.weight=rans:row:{tail}",
        f"{last}output.dense.weight=rans:row:{tail}",
        f"pooler.dense.weight=rans:row:{tail}",
        f"cls.predictions.transform.dense.weight=rans:row:{tail}",
        f"embeddings.word_embeddings.weight=rans:row:{word}",
        f"embeddings.position_embeddings.weight=rans:row:{position or word}",
        "encoder.*.weight=rans:row:" + str(layers), "*=f32"])


def candidate_plans(config):
    """{id: (description, plan text)}: the plain baselines (f32, naive int8, int8 words, f16,
    int8 linear layers), then entropy-coded mixes from 8 MB class to f16 class, so that the
    table shows the whole trade-off."""
    plans = {
        "f32": ("f32 (the reference itself: the engine's noise)", "*=f32"),
        "naive": ("naive: int8 per tensor everywhere", "*=int8:tensor"),
        "int8-words": ("int8 per-row word embeddings, rest f32",
                       "embeddings.word_embeddings.weight=int8:row,*=f32"),
        "f16": ("f16 everywhere", "*=f16"),
        "int8-linear-qk32": ("int8 per-channel linear layers, f32 query/key, rest f32",
                             "*LayerNorm*=f32,*.query.weight=f32,*.key.weight=f32,"
                             "encoder.*.weight=int8:row,*=f32"),
        "int8-linear-qk16": ("int8 per-channel linear layers, f16 query/key, rest f32",
                             "*LayerNorm*=f32,*.query.weight=f16,*.key.weight=f16,"
                             "encoder.*.weight=int8:row,*=f32"),
        "int8-rows": ("int8 per-row matrices (embeddings too), rest f32",
                      "*LayerNorm*=f32,*.weight=int8:row,*=f32"),
        "rans-127": ("the same values as int8-rows, entropy-coded (rans 127 levels)",
                     "*LayerNorm*=f32,*.weight=rans:row:127,*=f32"),
        "rans-words-15": ("word embeddings at 15 levels (int5-like), entropy-coded; rest f32",
                          "embeddings.word_embeddings.weight=rans:row:15,*=f32"),
    }
    # The tail keeps 127 levels: at 31 (one row, not shipped) attention is unchanged but the
    # masked-LM predictions of a trained model move by more than 1%.
    for word, layers, tail in ((7, 31, 31), (15, 63, 31), (31, 127, 127), (255, 255, 127),
                               (511, 383, 127), (511, 767, 127), (767, 383, 127), (767, 511, 31),
                               (767, 511, 127), (1023, 511, 127), (1023, 767, 127),
                               (1535, 767, 127), (1535, 1023, 127), (2047, 1023, 127),
                               (2047, 1535, 127), (2559, 1279, 127), (3071, 1535, 127),
                               (3071, 2047, 127), (4095, 2047, 127),
                               # Headroom: the need grew with training (model_data/README.md).
                               (4095, 3071, 127), (6143, 4095, 127), (8191, 4095, 127),
                               (16383, 2047, 127), (16383, 3071, 127), (16383, 4095, 127)):
        plans[f"mix-{word}-{layers}-{tail}"] = (
            f"rans: words {word} levels, encoder {layers}, attention-free tail {tail}",
            layer_plan(config, word, layers, tail))
    return plans


# Rows that illustrate a point and are never shipped.
NOT_SHIPPED = {"f32", "mix-767-511-31"}


def make_sentences(args):
    with open(args.corpus, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    tokenized = subprocess.run([CLI, "tokenize", "--vocab", args.vocab, "--lines"],
                               input="\n".join(lines) + "\n", capture_output=True, text=True,
                               check=True).stdout.splitlines()
    if len(tokenized) != len(lines):
        raise SystemExit(f"tokenizer returned {len(tokenized)} lines for {len(lines)}")
    fitting = [line for line, ids in zip(lines, tokenized)
               if MIN_TOKENS <= len(ids.split()) <= MAX_TOKENS]
    if len(fitting) < args.count:
        raise SystemExit(f"only {len(fitting)} sentences of {MIN_TOKENS}-{MAX_TOKENS} tokens")
    step = len(fitting) / args.count
    chosen = [fitting[int((k + args.offset) * step)] for k in range(args.count)]
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(chosen) + "\n")
    print(f"wrote {args.out}: {len(chosen)} of {len(fitting)} held-out lines of "
          f"{MIN_TOKENS}-{MAX_TOKENS} tokens")


def compare(reference, paths, sentences):
    """One result dict per path, from attention-cli compare."""
    out = subprocess.run([CLI, "compare", "--reference", reference, "--sentences", sentences] +
                         [arg for p in paths for arg in ("--model", p)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"attention-cli compare failed: {out.stderr.strip()}")
    return [json.loads(line) for line in out.stdout.splitlines()]


def site_bytes():
    """Bytes of the page without its model files: everything under web/ but web/models/."""
    total = 0
    for folder, dirs, files in os.walk(os.path.join(ROOT, "web")):
        models = os.path.join(ROOT, "web", "models")
        dirs[:] = [d for d in dirs if os.path.join(folder, d) != models]
        total += sum(os.path.getsize(os.path.join(folder, name)) for name in files)
    return total


def run(args):
    reference = modelfile.read(args.reference)
    plans = candidate_plans(reference.config)
    if args.plans:
        wanted = args.plans.split(",")
        unknown = [w for w in wanted if w not in plans]
        if unknown:
            raise SystemExit(f"unknown plan(s) {unknown}; known: {list(plans)}")
        plans = {name: plans[name] for name in wanted}
    folder = args.keep or tempfile.mkdtemp(prefix="precision_study_")
    os.makedirs(folder, exist_ok=True)
    try:
        paths = {}
        for name, (_, plan) in plans.items():
            paths[name] = os.path.join(folder, f"{name}.attn")
            convert_model.write_requantized(reference, paths[name], plan, args.reference)
        results = {}
        names = list(plans)
        for start in range(0, len(names), args.batch):
            batch = names[start:start + args.batch]
            for name, result in zip(batch, compare(args.reference, [paths[n] for n in batch],
                                                   args.sentences)):
                results[name] = result
        print_table(args, plans, results)
        passing = [n for n in names
                   if results[n]["attention_max_abs"] <= args.bar and n not in NOT_SHIPPED]
        if args.ship:
            if not passing:
                raise SystemExit(f"no plan meets attention max |diff| <= {args.bar}")
            best = min(passing, key=lambda n: results[n]["file_bytes"])
            shutil.copyfile(paths[best], args.ship)
            r = results[best]
            print(f"\nshipped: {args.ship} = {best}: {r['file_bytes']:,} bytes, attention "
                  f"max |diff| {r['attention_max_abs']:.2e}\n  plan: {plans[best][1]}")
            if os.path.exists(args.validation):
                v = compare(args.reference, [paths[best]], args.validation)[0]
                print(f"  on the validation set ({os.path.relpath(args.validation, ROOT)}, "
                      f"{v['sentences']} other sentences): attention max |diff| "
                      f"{v['attention_max_abs']:.2e}, rollout {v['rollout_max_abs']:.2e}")
    finally:
        if not args.keep:
            shutil.rmtree(folder)


def print_table(args, plans, results):
    site = site_bytes()
    command = " ".join(["python3 -m scripts.training.precision_study"] + sys.argv[1:])
    print(f"Measured with `{command}` on {args.reference} over "
          f"{next(iter(results.values()))['sentences']} sentences "
          f"({os.path.relpath(args.sentences, ROOT)}); page = model + {site / 1e6:.2f} MB of "
          f"HTML, JS, CSS and wasm (web/ without models).\n")
    print("| plan | what | model MB | page MB | attention max abs | attention mean abs "
          "| argmax changed | rollout max abs | masked-LM top-1 agreement | meets 1e-3 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in plans:
        r = results[name]
        mlm = r["masked_lm_top1_agreement"]
        print(f"| {name} | {plans[name][0]} | {r['file_bytes'] / 1e6:.2f} "
              f"| {(r['file_bytes'] + site) / 1e6:.2f} | {r['attention_max_abs']:.2e} "
              f"| {r['attention_mean_abs']:.2e} "
              f"| {100 * r['argmax_changed_share']:.2f}% | {r['rollout_max_abs']:.2e} "
              f"| {'-' if mlm is None else f'{100 * mlm:.1f}%'} "
              f"| {'yes' if r['attention_max_abs'] <= args.bar else 'no'} |")
    masked = next(iter(results.values()))["masked_positions"]
    print(f"\nRows compared: {next(iter(results.values()))['rows']:,}; masked positions: "
          f"{masked}. Plans (first match wins, unmatched f32):")
    mixes = [name for name in plans if name.startswith("mix-")]
    for name, (_, plan) in plans.items():
        if name not in mixes[1:]:
            print(f"- {name}: `{plan}`")
    if len(mixes) > 1:
        print("- the other mix-W-L-T plans: the same as the first, with W, L and T levels")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m scripts.training.precision_study",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sentences", help="write the fixed sentence set")
    p.add_argument("--corpus", default=os.path.join(ROOT, "corpus", "heldout.txt"))
    p.add_argument("--vocab", default=os.path.join(ROOT, "model_data", "vocab.txt"))
    p.add_argument("--count", type=int, default=240)
    p.add_argument("--offset", type=float, default=0.0,
                   help="where in each step to pick, in [0, 1) (the validation set uses 0.5)")
    p.add_argument("--out", default=SENTENCES)
    p.set_defaults(run=make_sentences)
    p = sub.add_parser("run", help="measure the candidate plans")
    p.add_argument("reference", help="the f32 model file")
    p.add_argument("--sentences", default=SENTENCES)
    p.add_argument("--validation", default=VALIDATION)
    p.add_argument("--plans", help="comma-separated plan names (default: all)")
    p.add_argument("--bar", type=float, default=ATTENTION_BAR)
    p.add_argument("--ship", metavar="OUT", help="copy the smallest plan meeting the bar here")
    p.add_argument("--keep", metavar="DIR", help="keep every candidate file in DIR")
    p.add_argument("--batch", type=int, default=6, help="models per attention-cli call")
    p.set_defaults(run=run)
    args = parser.parse_args(argv)
    if not os.access(CLI, os.X_OK):
        raise SystemExit(f"{CLI} is not built; run scripts/build.sh native")
    args.run(args)


if __name__ == "__main__":
    main()
