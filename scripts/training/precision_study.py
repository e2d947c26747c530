"""Where to spend precision: measures candidate precision plans of a model file against its f32
original on a fixed set of held-out sentences, with the C++ engine (attention-cli compare).

    python3 -m scripts.training.precision_study sentences [--count 240] [--offset 0] [--out FILE]
    python3 -m scripts.training.precision_study run REFERENCE.attn [--plans NAME,...]
                                                    [--ship OUT.attn] [--keep DIR]
    python3 -m scripts.training.precision_study tensors REFERENCE.attn [--ship OUT.attn]
    python3 -m scripts.training.precision_study uniform REFERENCE.attn [--ship OUT.attn]

`sentences` picks the fixed set from corpus/heldout.txt: lines of 5 to 60 tokens ([CLS] and
[SEP] included), evenly spaced through the file. `run` writes every candidate plan's file,
compares each with REFERENCE and prints a markdown table: file bytes; attention max and mean
absolute difference over every layer, head and row; share of rows whose argmax moved; rollout
max difference; masked-LM top-1 agreement at masked positions. --ship copies the smallest file
whose attention max difference meets the bar (1e-3, docs/ARCHITECTURE.md "Fidelity bars") to OUT
(the f32 reference itself and rows that only illustrate a point excepted); --keep keeps all files.

`tensors` spends the core file's bytes (everything the page loads before a sentence: all but the
word-embedding rows, which the split layout fetches per sentence) tensor by tensor. It measures
each matrix that some attention probability depends on alone at every level of LADDER (the rest
f32), orders the one-step reductions by bytes saved per unit of added attention error (a greedy
walk over that profile, errors summed as a pessimistic estimate), and then measures the real
plans along that path on both sentence sets, keeping the smallest that meets the bar on both.
Fixed parts: word embeddings at the shipped 16383 levels, the attention-free tail at 127, the
masked-LM bias entropy-coded as one group at BIAS_LEVELS, the pooler left out (BertForMaskedLM
has none, and no figure reads it), LayerNorm and the other biases f32.

`uniform` is the quick plan for a model too large for that study in the time at hand (bert-base:
69 matrices at 12 levels are 828 requantized files): the same fixed parts, every matrix that
attention depends on at one level, the coarsest of LADDER meeting the bar on both sets, found by
bisection in about five measurements. It is larger than the per-tensor plan for the same bar
(each matrix gets the level the most sensitive one needs); the study prints both sizes.
Both print progress with the time spent and an estimate of the time left on stderr.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from scripts.model import convert_model, modelfile, split_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
SENTENCES = os.path.join(ROOT, "tests", "fixtures", "precision_sentences.txt")
# A second, disjoint set from the same lines (offset by half a step): the shipped plan is checked
# on it too, to see how far a maximum over 240 sentences carries to other sentences.
VALIDATION = os.path.join(ROOT, "tests", "fixtures", "precision_sentences_validation.txt")
# The fidelity bar for the compact (shipped) weights (docs/ARCHITECTURE.md, "Fidelity bars").
ATTENTION_BAR = 1e-3
MIN_TOKENS, MAX_TOKENS = 5, 60


def tail_rules(config, tail, pooler):
    """Plan rules for the matrices no attention probability depends on: the last layer's value,
    attention output and feed-forward, the pooler (when kept) and the masked-LM transform."""
    last = f"encoder.layer.{config.num_hidden_layers - 1}."
    names = [f"{last}attention.self.value.weight", f"{last}attention.output.dense.weight",
             f"{last}intermediate.dense.weight", f"{last}output.dense.weight"]
    names += ["pooler.dense.weight"] if pooler else []
    names += ["cls.predictions.transform.dense.weight"]
    return [f"{name}=rans:row:{tail}" for name in names]


def layer_plan(config, word, layers, tail, position=None):
    """A rans plan: word embeddings at `word` levels per row, the position embeddings at
    `position` (default: as the words), encoder matrices at `layers`. The tensors that no
    attention probability depends on (the last layer's value, attention output and
    feed-forward, the pooler, the masked-LM transform) get `tail` levels: they change only the
    masked-LM predictions, which the table reports. LayerNorm, biases and token types stay f32:
    they are 0.1% of the weights, and an f16 LayerNorm weight alone moves attention by 4e-4."""
    return ",".join([
        "*LayerNorm*=f32", "*.bias=f32", *tail_rules(config, tail, pooler=True),
        f"embeddings.word_embeddings.weight=rans:row:{word}",
        f"embeddings.position_embeddings.weight=rans:row:{position or word}",
        "encoder.*.weight=rans:row:" + str(layers), "*=f32"])


# Levels the per-tensor study may give a matrix, finest first.
LADDER = (16383, 8191, 4095, 3071, 2047, 1535, 1023, 767, 511, 383, 255, 127)
WORD_LEVELS, TAIL_LEVELS = 16383, 127
# The masked-LM output bias (one value per vocabulary entry) as one rans group: its step at 4095
# levels is 6e-4 in the logits, far below what moves a prediction's rank.
BIAS_LEVELS = 4095


def attention_matrices(config):
    """The matrices some attention probability depends on, in file order: the position
    embeddings, every matrix of the layers before the last, and the last layer's query and key."""
    names = ["embeddings.position_embeddings.weight"]
    for layer in range(config.num_hidden_layers):
        prefix = modelfile.layer_prefix(layer)
        kinds = ["attention.self.query", "attention.self.key"]
        if layer < config.num_hidden_layers - 1:
            kinds += ["attention.self.value", "attention.output.dense", "intermediate.dense",
                      "output.dense"]
        names += [f"{prefix}{kind}.weight" for kind in kinds]
    return names


def tensor_plan(config, levels):
    """A rans plan with these per-matrix levels ({name: levels}) and the fixed parts."""
    return ",".join(
        [f"{name}=rans:row:{level}" for name, level in levels.items()] +
        ["*LayerNorm*=f32", f"cls.predictions.bias=rans:tensor:{BIAS_LEVELS}", "*.bias=f32",
         *tail_rules(config, TAIL_LEVELS, pooler=False),
         f"embeddings.word_embeddings.weight=rans:row:{WORD_LEVELS}", "*=f32"])


def encoded_bytes(model, name, rule):
    """Bytes of one tensor under one plan rule ('rans:row:511')."""
    values = np.asarray(model.tensors[name], dtype=np.float32)
    dtype, group, levels = modelfile._resolve(modelfile.parse_plan(f"{name}={rule}"), name,
                                              values.shape)
    return len(modelfile._encode(name, values.reshape(-1), dtype, group, levels))


def greedy_path(units, ladder, error, size):
    """States {unit: ladder index} from all-finest to all-coarsest, one step of one unit at a
    time, each step the one that saves the most bytes per unit of estimated error added."""
    state = {u: 0 for u in units}
    path = [dict(state)]
    while True:
        best = None
        for u in units:
            i = state[u]
            if i + 1 >= len(ladder):
                continue
            saved = size[u][i] - size[u][i + 1]
            added = max(error[u][i + 1] - error[u][i], 1e-9)
            if best is None or saved / added > best[0]:
                best = (saved / added, u)
        if best is None:
            return path
        state[best[1]] += 1
        path.append(dict(state))


class Progress:
    """Lines on stderr while a study runs: how far it is, the time so far and an estimate of
    the time left (from the mean time per step so far)."""

    def __init__(self, what, total):
        self.what, self.total, self.start = what, total, time.monotonic()

    def step(self, done, detail=""):
        spent = time.monotonic() - self.start
        left = spent / done * (self.total - done) if done else 0.0
        print(f"{self.what}: {done}/{self.total}, {spent:.0f} s so far, about {left:.0f} s left"
              f"{'; ' + detail if detail else ''}", file=sys.stderr, flush=True)


def ship_along(args, reference, path, folder):
    """Measures the real plans along `path` (a list of {matrix: LADDER index}, finest first) on
    both sentence sets and returns (index of the last plan meeting the bar, {index: measured}).
    The error grows along a path (not strictly: each point is a max over rows), so a bisection
    finds the last passing step; step 0 must pass."""
    config = reference.config
    measured = {}
    progress = Progress("plans", max(1, (len(path) - 1).bit_length() + 1))

    def measure(step):
        if step not in measured:
            levels = {u: LADDER[i] for u, i in path[step].items()}
            plan = tensor_plan(config, levels)
            out = os.path.join(folder, f"step{step}.attn")
            data = convert_model.write_requantized(reference, out, plan, args.reference,
                                                   drop_pooler=True)
            study = compare(args.reference, [out], args.sentences)[0]
            validation = compare(args.reference, [out], args.validation)[0]
            core = len(split_model.split_bytes(data)[0])
            measured[step] = (plan, out, core, study, validation)
            progress.step(len(measured), f"step {step}: core {core:,} bytes, attention max "
                          f"|diff| {study['attention_max_abs']:.2e} / "
                          f"{validation['attention_max_abs']:.2e}")
        _, _, _, study, validation = measured[step]
        return max(study["attention_max_abs"], validation["attention_max_abs"]) <= args.bar

    low, high = 0, len(path) - 1
    if not measure(low):
        raise SystemExit("even the finest plan misses the bar")
    while high - low > 1:
        mid = (low + high) // 2
        if measure(mid):
            low = mid
        else:
            high = mid
    if measure(high):
        low = high
    return low, measured


def ship(args, measured, best):
    plan, out, core, _, _ = measured[best]
    if args.ship:
        shutil.copyfile(out, args.ship)
        print(f"\nshipped: {args.ship}: {os.path.getsize(out):,} bytes, core {core:,} bytes"
              f"\n  plan: {plan}")


def tensors(args):
    reference = modelfile.read(args.reference)
    units = attention_matrices(reference.config)
    folder = tempfile.mkdtemp(prefix="precision_tensors_")
    try:
        # 1. Profile: each matrix alone at each level, the rest f32.
        jobs = [(u, level) for u in units for level in LADDER]
        error = {u: [0.0] * len(LADDER) for u in units}
        progress = Progress("profile", len(jobs))
        for start in range(0, len(jobs), args.batch):
            batch = jobs[start:start + args.batch]
            paths = []
            for k, (u, level) in enumerate(batch):
                paths.append(os.path.join(folder, f"profile{k}.attn"))
                convert_model.write_requantized(reference, paths[-1],
                                                f"{u}=rans:row:{level},*=f32", args.reference)
            for (u, level), r in zip(batch, compare(args.reference, paths, args.sentences)):
                error[u][LADDER.index(level)] = r["attention_max_abs"]
            progress.step(min(start + args.batch, len(jobs)))
        size = {u: [encoded_bytes(reference, u, f"rans:row:{level}") for level in LADDER]
                for u in units}

        # 2. The greedy path over the profile, then the real plans along it.
        path = greedy_path(units, LADDER, error, size)
        best, measured = ship_along(args, reference, path, folder)
        print_tensor_tables(args, units, error, size, path[best], measured, best)
        ship(args, measured, best)
    finally:
        shutil.rmtree(folder)


def uniform(args):
    """The quick plan: every matrix attention depends on at one level, the coarsest of LADDER
    that meets the bar on both sentence sets (a bisection: about five measurements, against
    the per-tensor study's len(LADDER) for each matrix and then the path). The fixed parts are
    the per-tensor study's."""
    reference = modelfile.read(args.reference)
    units = attention_matrices(reference.config)
    folder = tempfile.mkdtemp(prefix="precision_uniform_")
    try:
        path = [{u: i for u in units} for i in range(len(LADDER))]
        best, measured = ship_along(args, reference, path, folder)
        command = " ".join(["python3 -m scripts.training.precision_study"] + sys.argv[1:])
        print(f"Measured with `{command}` on {args.reference}: every matrix that attention "
              f"depends on at one level.\n")
        print_path_table(args, measured, best, lambda step: f"{LADDER[step]} levels")
        ship(args, measured, best)
    finally:
        shutil.rmtree(folder)


def print_tensor_tables(args, units, error, size, chosen, measured, best):
    command = " ".join(["python3 -m scripts.training.precision_study"] + sys.argv[1:])
    print(f"Measured with `{command}` on {args.reference}: attention max |diff| over "
          f"{os.path.relpath(args.sentences, ROOT)} with one matrix at the given levels and "
          f"everything else f32.\n")
    print("| matrix | " + " | ".join(str(level) for level in LADDER) + " | chosen | bytes |")
    print("|---|" + "---|" * (len(LADDER) + 2))
    for u in units:
        cells = [f"{e:.1e}" for e in error[u]]
        print(f"| {u} | " + " | ".join(cells) +
              f" | {LADDER[chosen[u]]} | {size[u][chosen[u]]:,} |")
    print("\nPlans measured along the greedy path (both sentence sets):\n")
    print_path_table(args, measured, best, str)


def print_path_table(args, measured, best, name):
    print("| step | core bytes | attention max abs | validation max abs | rollout max abs "
          "| masked-LM top-1 agreement | meets 1e-3 on both |")
    print("|---|---|---|---|---|---|---|")
    for step in sorted(measured):
        _, _, core, study, validation = measured[step]
        mlm = study["masked_lm_top1_agreement"]
        ok = max(study["attention_max_abs"], validation["attention_max_abs"]) <= args.bar
        print(f"| {name(step)}{' (shipped)' if step == best else ''} | {core:,} "
              f"| {study['attention_max_abs']:.2e} | {validation['attention_max_abs']:.2e} "
              f"| {study['rollout_max_abs']:.2e} "
              f"| {'-' if mlm is None else f'{100 * mlm:.1f}%'} | {'yes' if ok else 'no'} |")


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
    for name, help_text, study in (("tensors", "per-tensor levels for the core file", tensors),
                                   ("uniform", "the quick plan: one level for every matrix",
                                    uniform)):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("reference", help="the f32 model file")
        p.add_argument("--sentences", default=SENTENCES)
        p.add_argument("--validation", default=VALIDATION)
        p.add_argument("--bar", type=float, default=ATTENTION_BAR)
        p.add_argument("--ship", metavar="OUT", help="copy the chosen plan's file here")
        p.add_argument("--batch", type=int, default=6, help="models per attention-cli call")
        p.set_defaults(run=study)
    args = parser.parse_args(argv)
    if not os.access(CLI, os.X_OK):
        raise SystemExit(f"{CLI} is not built; run scripts/build.sh native")
    args.run(args)


if __name__ == "__main__":
    main()
