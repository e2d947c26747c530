"""Evaluates a masked LM on the held-out corpus and profiles its heads with the engine.

  python3 -m scripts.training.eval_model MODEL [--sentences 400] [--out report.md]

MODEL is a Hugging Face folder (config.json, vocab.txt, pytorch_model.bin) or an .attn model
file; the other form is made with scripts/model/convert_model.py in a temporary folder.

Masked-token accuracy: the held-out documents are packed exactly as for training (up to 128
tokens of consecutive sentences of one document); with a fixed seed, 15% of the ordinary tokens
(never [CLS], [SEP], [PAD]) are chosen and ALL of them are replaced by [MASK] (no 10% random /
10% unchanged, which would let a model score by copying the input). Top-1 accuracy is the share
of chosen positions whose highest logit is the original token. Two baselines are measured on the
same positions: always predicting the most frequent ordinary token of the training set, and the
same architecture randomly initialised (seed 0, the training script's initialisation).

Head profiles: held-out sentences (a seeded sample) go through `attention-cli profile`, which
counts every head's rows over the whole set and labels each head by the core's rule
(wasm/core/analysis.h, HeadProfile::Label); this script only reports them.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

from scripts.reference.bert_torch import BertForMaskedLM, load_hf_folder
from scripts.training.train_default_model import (FIRST_ORDINARY_ID, MASK, make_batch,
                                                  pack_sequences)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MASK_SEED = 20261130
def masked_batches(corpus, split, batch_size, seq_len, max_sequences=0):
    """Yields (input ids with [MASK], attention mask, chosen positions, original ids)."""
    ids = np.load(os.path.join(corpus, f"{split}_ids.npy")).astype(np.int64)
    spans = pack_sequences(np.load(os.path.join(corpus, f"{split}_sentences.npy")),
                           np.load(os.path.join(corpus, f"{split}_documents.npy")), seq_len)
    if max_sequences:
        spans = spans[:max_sequences]
    generator = torch.Generator().manual_seed(MASK_SEED)
    for start in range(0, len(spans), batch_size):
        input_ids, attention_mask = make_batch(ids, spans[start:start + batch_size])
        ordinary = input_ids >= FIRST_ORDINARY_ID
        chosen = (torch.rand(input_ids.shape, generator=generator) < 0.15) & ordinary
        corrupted = input_ids.clone()
        corrupted[chosen] = MASK
        yield corrupted, attention_mask, chosen, input_ids


def most_frequent_token(corpus):
    counts = np.bincount(np.load(os.path.join(corpus, "train_ids.npy")), minlength=30522)
    counts[:FIRST_ORDINARY_ID] = 0  # only ordinary tokens are ever masked
    return int(counts.argmax())


def masked_lm_scores(model, batches, constant_prediction=None):
    """(top-1 accuracy, mean cross-entropy in nats, number of masked positions)."""
    correct, loss_sum, count = 0, 0.0, 0
    model.eval()
    with torch.no_grad():
        for corrupted, attention_mask, chosen, labels in batches:
            targets = labels[chosen]
            if constant_prediction is not None:
                correct += int((targets == constant_prediction).sum())
            else:
                logits = model(corrupted, attention_mask, masked_positions=chosen)
                correct += int((logits.argmax(-1) == targets).sum())
                loss_sum += float(F.cross_entropy(logits, targets, reduction="sum"))
            count += int(targets.numel())
    return correct / count, loss_sum / count, count


def head_profiles(cli, model_file, sentences, tmp):
    """Every head over the sentences, as the core profiles and labels it (attention-cli profile):
    [{layer, head (from 0), label, previous_token, next_token, sink, self, punctuation (shares of
    rows), mean_entropy, mean_normalized_entropy, mean_ratio_to_uniform}] and the rows per head."""
    path = os.path.join(tmp, "profile_sentences.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(" ".join(text.split()) + "\n" for text in sentences))
    result = subprocess.run([cli, "profile", "--model", model_file, "--sentences", path, "--json",
                             "--resamples", "0"], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"eval: attention-cli profile failed: {result.stderr.strip()}")
    heads = json.loads(result.stdout)["heads"]
    profiles = []
    for head in heads:
        c = head["counts"]
        share = lambda count: count / c["rows"]  # noqa: E731
        profiles.append({
            "layer": head["layer"] - 1, "head": head["head"] - 1, "label": head["label"],
            "previous_token": share(c["previous_token"]), "next_token": share(c["next_token"]),
            "sink": share(c["cls"] + c["sep"]), "self": share(c["self"]),
            "punctuation": share(c["punctuation"]), "mean_entropy": head["mean_entropy"],
            "mean_normalized_entropy": head["mean_normalized_entropy"]["value"],
            "mean_ratio_to_uniform": head["mean_ratio_to_uniform"]["value"],
        })
    return profiles, heads[0]["counts"]["rows"]


def sample_sentences(corpus, count, max_words):
    with open(os.path.join(corpus, "heldout.txt"), encoding="utf-8") as f:
        lines = [l for l in f.read().split("\n") if l and 4 <= len(l.split()) <= max_words]
    return random.Random(MASK_SEED).sample(lines, min(count, len(lines)))


def prepare(model_path, tmp):
    """(HF folder, model file) for MODEL, converting where needed."""
    # The converter runs as a module of the scripts package, from the repository root.
    convert = [sys.executable, "-m", "scripts.model.convert_model"]
    if os.path.isdir(model_path):
        model_file = os.path.join(tmp, "model.attn")
        subprocess.run(convert + ["to-attn", os.path.abspath(model_path), model_file], check=True,
                       capture_output=True, cwd=ROOT)
        return model_path, model_file
    hf_dir = os.path.join(tmp, "hf")
    subprocess.run(convert + ["to-hf", os.path.abspath(model_path), hf_dir], check=True,
                   capture_output=True, cwd=ROOT)
    return hf_dir, model_path


def markdown(args, scores, baseline_frequent, baseline_random, frequent_token, profiles, rows,
             n_sentences, training, manifest):
    acc, loss, count = scores
    lines = ["## Evaluation", "",
             f"Measured by `python3 -m scripts.training.eval_model {args.model_arg}` on the "
             "held-out documents "
             f"({manifest['heldout']['documents']} documents, {manifest['heldout']['tokens']:,} "
             "tokens, never trained on). 15% of the ordinary tokens, chosen with a fixed seed, are "
             f"all replaced by [MASK]; {count:,} masked positions.", "",
             "| predictor | top-1 accuracy |", "|---|---|",
             f"| this model | **{acc:.1%}** (cross-entropy {loss:.3f} nats) |",
             f"| always the most frequent training token (`{frequent_token}`) | "
             f"{baseline_frequent[0]:.1%} |",
             f"| the same architecture, randomly initialised | {baseline_random[0]:.1%} |", ""]
    lines += ["### Head profiles", "",
              f"Over {n_sentences} held-out sentences ({rows:,} attention rows per head), computed "
              "by the engine (`attention-cli analyze --json`). Each column is the share of rows "
              "whose largest weight falls on the previous token, the next token, [CLS] or [SEP], "
              "the token itself, or punctuation; the label is the rule of "
              "`wasm/core/analysis.h` (broad when the mean normalised entropy is at least 0.9, "
              "otherwise the category of at least half the rows, otherwise mixed).", "",
              "| layer | head | label | prev | next | [CLS]/[SEP] | self | punct | ratio to uniform "
              "| entropy / log n |", "|---|---|---|---|---|---|---|---|---|---|"]
    for p in profiles:
        lines.append(f"| {p['layer']} | {p['head']} | {p['label']} | {p['previous_token']:.2f} | "
                     f"{p['next_token']:.2f} | {p['sink']:.2f} | {p['self']:.2f} | "
                     f"{p['punctuation']:.2f} | {p['mean_ratio_to_uniform']:.2f} | "
                     f"{p['mean_normalized_entropy']:.2f} |")
    counts = {}
    for p in profiles:
        counts[p["label"]] = counts.get(p["label"], 0) + 1
    lines += ["", "Labels: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items(),
                                                                    key=lambda kv: -kv[1])) + ".",
              ""]
    if training:
        lines += ["### Provenance", "",
                  f"- Training: {training['steps']:,} steps of {training['batch_size']} sequences "
                  f"of up to {training['seq_len']} tokens, {training['tokens_seen']:,} tokens seen "
                  f"({training['epochs']:.2f} epochs), {training['train_seconds'] / 60:.0f} "
                  f"minutes of training on {training['device']}, final training loss "
                  f"{training['final_loss']:.3f}, seed {training['seed']}, peak learning rate "
                  f"{training['peak_lr']}.",
                  f"- Corpus: {manifest['train']['tokens']:,} training tokens from "
                  + ", ".join(f"{s['package']} {s['version']}" for s in manifest["sources"])
                  + f"; manifest sha256 `{training['corpus_manifest_sha256'][:16]}...`.",
                  f"- Code: commit `{(training.get('git_commit') or 'unknown')[:12]}`.", ""]
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(prog="python3 -m scripts.training.eval_model",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="Hugging Face folder or .attn model file")
    p.add_argument("--corpus", default=os.path.join(ROOT, "corpus"))
    p.add_argument("--cli", default=os.path.join(ROOT, "build/native/attention-cli"))
    p.add_argument("--sentences", type=int, default=400, help="held-out sentences for profiles")
    p.add_argument("--max-words", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--max-sequences", type=int, default=0,
                   help="evaluate only the first N held-out sequences (quick checks)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", help="write the markdown section here (default: standard output)")
    p.add_argument("--json", help="also write every number as JSON here")
    args = p.parse_args()
    args.model_arg = args.model
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)

    with open(os.path.join(args.corpus, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    tmp = tempfile.mkdtemp(prefix="attn_eval_")
    try:
        hf_dir, model_file = prepare(args.model, tmp)
        model = load_hf_folder(hf_dir)
        batches = lambda: masked_batches(args.corpus, "heldout", args.batch_size, args.seq_len,  # noqa: E731
                                         args.max_sequences)
        scores = masked_lm_scores(model, batches())
        frequent = most_frequent_token(args.corpus)
        baseline_frequent = masked_lm_scores(model, batches(), constant_prediction=frequent)
        torch.manual_seed(0)
        baseline_random = masked_lm_scores(BertForMaskedLM(model.config), batches())
        sentences = sample_sentences(args.corpus, args.sentences, args.max_words)
        profiles, rows = head_profiles(args.cli, model_file, sentences, tmp)
    finally:
        shutil.rmtree(tmp)

    with open(os.path.join(ROOT, "model_data", "vocab.txt"), encoding="utf-8") as f:
        frequent_piece = f.read().split("\n")[frequent]
    training = None
    training_path = os.path.join(hf_dir, "training.json") if os.path.isdir(args.model) else None
    if training_path and os.path.exists(training_path):
        with open(training_path, encoding="utf-8") as f:
            training = json.load(f)
    text = markdown(args, scores, baseline_frequent, baseline_random, frequent_piece, profiles,
                    rows, len(sentences), training, manifest)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"masked_lm": {"accuracy": scores[0], "cross_entropy": scores[1],
                                     "positions": scores[2]},
                       "most_frequent_token": {"id": frequent, "piece": frequent_piece,
                                               "accuracy": baseline_frequent[0]},
                       "random_init": {"accuracy": baseline_random[0],
                                       "cross_entropy": baseline_random[1]},
                       "head_profiles": profiles, "profile_rows": rows,
                       "profile_sentences": len(sentences)}, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
