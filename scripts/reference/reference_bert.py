"""An independent reference forward pass of BERT in plain PyTorch, for parity tests.

It shares no code with the C++ engine (wasm/core/encoder.*) and does not use `transformers`:
the Hugging Face `BertModel` semantics are written out with torch operations. It reads a Hugging
Face checkpoint folder (config.json with pytorch_model.bin or model.safetensors; names with or
without the `bert.` prefix of BertForMaskedLM) and computes, for one sentence of token ids, the
hidden states, the attention probabilities of every layer and head, and attention rollout.

    python3 -m scripts.reference.reference_bert HF_DIR --ids 101,7592,102 [--json]
    python3 -m scripts.reference.reference_bert HF_DIR --fixtures OUT --lengths 2,9,33 --seed 7

Fixture layout (read by tests/cpp/parity_test.cc), one folder per case OUT/<k>/, k = 0, 1, ...:
ids.txt (space-separated ids), meta.txt ("layers heads n hidden"), removed.txt (only in cases
made with --ablations: L*H flags, 1 = head removed), attention.f32 (L*H*n*n,
[l][h][i][j]), hidden.f32 ((L+1)*n*d, index 0 the embeddings output), rollout.f32 (n*n); all
float32 little-endian. The computation runs in float64, so the reference is more exact than the
float32 engine it checks.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import torch

from scripts.model import safetensors_io

CLS_ID, SEP_ID = 101, 102


def load_hf_folder(folder):
    """(config dict, weights: BertModel name -> float32 tensor) from a checkpoint folder."""
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    safetensors_path = os.path.join(folder, "model.safetensors")
    bin_path = os.path.join(folder, "pytorch_model.bin")
    if os.path.exists(safetensors_path):
        arrays, _ = safetensors_io.load(safetensors_path)
        state = {k: torch.from_numpy(np.array(v)) for k, v in arrays.items()}
    elif os.path.exists(bin_path):
        state = torch.load(bin_path, map_location="cpu", weights_only=True)
    else:
        raise FileNotFoundError(f"{folder}: neither model.safetensors nor pytorch_model.bin")
    weights = {}
    for name, tensor in state.items():
        if name.startswith("bert."):
            name = name[len("bert."):]
        # Checkpoints converted from TensorFlow long ago call LayerNorm's parameters gamma/beta.
        name = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace(
            "LayerNorm.beta", "LayerNorm.bias")
        if name.startswith(("embeddings.", "encoder.")) and not name.endswith("position_ids"):
            weights[name] = tensor.float()
    return config, weights


def layer_norm(x, weight, bias, eps):
    """LayerNorm over the last axis with the biased variance, as torch.nn.LayerNorm."""
    mean = x.mean(dim=-1, keepdim=True)
    variance = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(variance + eps) * weight + bias


def gelu(x):
    """The exact (erf) GELU that BERT's `hidden_act: gelu` means."""
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def linear(x, weight, bias):
    """nn.Linear: weight is (out, in)."""
    return x @ weight.T + bias


def softmax_rows(scores):
    shifted = scores - scores.max(dim=-1, keepdim=True).values
    e = torch.exp(shifted)
    return e / e.sum(dim=-1, keepdim=True)


def self_attention(x, w, prefix, heads, removed=None):
    """Multi-head self-attention of x (n, d): (output (n, d), attention probs (H, n, n)).

    removed: H flags; a removed head's probabilities are multiplied by 0 before they weight the
    values (Hugging Face's head_mask), and the probabilities it computed are returned as they were.
    """
    n, d = x.shape
    d_head = d // heads

    def split_heads(t):  # (n, d) -> (H, n, d_head)
        return t.reshape(n, heads, d_head).transpose(0, 1)

    query = split_heads(linear(x, w[prefix + "self.query.weight"], w[prefix + "self.query.bias"]))
    key = split_heads(linear(x, w[prefix + "self.key.weight"], w[prefix + "self.key.bias"]))
    value = split_heads(linear(x, w[prefix + "self.value.weight"], w[prefix + "self.value.bias"]))
    scores = query @ key.transpose(1, 2) / math.sqrt(d_head)  # (H, n, n)
    attention_probs = softmax_rows(scores)                    # (H, n, n)
    weights = attention_probs
    if removed is not None:
        keep = torch.tensor([0.0 if r else 1.0 for r in removed], dtype=scores.dtype)
        weights = attention_probs * keep[:, None, None]
    context = (weights @ value).transpose(0, 1).reshape(n, d)
    return context, attention_probs


def forward(config, weights, ids, dtype=torch.float64, removed=None):
    """BertModel forward for one sentence (token type 0, no padding); removed: None or (L, H)
    flags of heads to remove (see self_attention).

    Returns (hidden_states (L+1, n, d), attention_probs (L, H, n, n)) as numpy arrays in dtype.
    """
    w = {k: v.to(dtype) for k, v in weights.items()}
    eps = float(config.get("layer_norm_eps", 1e-12))
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    ids = torch.as_tensor(ids, dtype=torch.long)
    n = ids.numel()

    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    hidden_states = [x]
    attention = []
    for layer in range(layers):
        p = f"encoder.layer.{layer}."
        context, attention_probs = self_attention(
            x, w, p + "attention.", heads, None if removed is None else removed[layer])
        attended = linear(context, w[p + "attention.output.dense.weight"],
                          w[p + "attention.output.dense.bias"])
        x = layer_norm(attended + x, w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], eps)
        intermediate = gelu(linear(x, w[p + "intermediate.dense.weight"],
                                   w[p + "intermediate.dense.bias"]))
        out = linear(intermediate, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
        x = layer_norm(out + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
                       eps)
        hidden_states.append(x)
        attention.append(attention_probs)
    return torch.stack(hidden_states).numpy(), torch.stack(attention).numpy()


def rollout(attention, residual=0.5):
    """Attention rollout (Abnar and Zuidema 2020) of attention (L, H, n, n): per layer
    residual * I + (1 - residual) * head average, rows renormalised, multiplied through the
    layers with later layers on the left. Returns (n, n)."""
    n = attention.shape[-1]
    result = np.eye(n)
    for layer_attention in attention:
        mixed = residual * np.eye(n) + (1.0 - residual) * layer_attention.astype(np.float64).mean(0)
        mixed /= mixed.sum(axis=1, keepdims=True)
        result = mixed @ result
    return result


def random_ids(length, vocab_size, rng):
    """[CLS] random ids [SEP]; the ids between avoid [PAD], [unused*] and the special tokens."""
    low = 999 if vocab_size > 2000 else 103
    middle = rng.integers(low, vocab_size, size=max(length - 2, 0)).tolist()
    return [CLS_ID] + middle + [SEP_ID]


def parse_heads(spec, layers, heads):
    """(L, H) flags from "all", "L.*" or "L.H" items joined by "+", counted from 1."""
    flags = [[0] * heads for _ in range(layers)]
    for item in spec.split("+"):
        if item == "all":
            flags = [[1] * heads for _ in range(layers)]
            continue
        layer, head = item.split(".")
        for h in (range(heads) if head == "*" else [int(head) - 1]):
            flags[int(layer) - 1][h] = 1
    return flags


def write_case(folder, ids, hidden_states, attention, rollout_matrix, removed=None):
    os.makedirs(folder, exist_ok=True)
    if removed is not None:
        with open(os.path.join(folder, "removed.txt"), "w") as f:
            f.write(" ".join(str(flag) for row in removed for flag in row) + "\n")
    layers, heads, n, _ = attention.shape
    with open(os.path.join(folder, "ids.txt"), "w") as f:
        f.write(" ".join(str(i) for i in ids) + "\n")
    with open(os.path.join(folder, "meta.txt"), "w") as f:
        f.write(f"{layers} {heads} {n} {hidden_states.shape[-1]}\n")
    for name, array in (("attention.f32", attention), ("hidden.f32", hidden_states),
                        ("rollout.f32", rollout_matrix)):
        np.ascontiguousarray(array, dtype="<f4").tofile(os.path.join(folder, name))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m scripts.reference.reference_bert",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("hf_dir", help="Hugging Face checkpoint folder")
    parser.add_argument("--ids", help="comma-separated token ids, e.g. 101,7592,102")
    parser.add_argument("--json", action="store_true", help="print hidden states, attention "
                        "and rollout as one JSON object")
    parser.add_argument("--fixtures", help="write parity fixture cases into this folder")
    parser.add_argument("--lengths", help="fixture sentence lengths, e.g. 2,5,17,64")
    parser.add_argument("--seed", type=int, default=0, help="seed for the fixture ids")
    parser.add_argument("--ablations", help="extra fixture cases with heads removed, one per "
                        "item of a comma-separated list, each 'all', 'L.*' (a layer) or 'L.H', "
                        "joined by '+', counted from 1; their ids have the first --lengths length")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config, weights = load_hf_folder(args.hf_dir)

    if args.fixtures:
        if not args.lengths:
            parser.error("--fixtures needs --lengths")
        rng = np.random.default_rng(args.seed)
        for k, length in enumerate(int(s) for s in args.lengths.split(",")):
            ids = random_ids(length, int(config["vocab_size"]), rng)
            hidden_states, attention = forward(config, weights, ids)
            write_case(os.path.join(args.fixtures, str(k)), ids, hidden_states, attention,
                       rollout(attention))
        layers, heads = int(config["num_hidden_layers"]), int(config["num_attention_heads"])
        first = int(args.lengths.split(",")[0])
        for m, spec in enumerate((args.ablations or "").split(",") if args.ablations else []):
            removed = parse_heads(spec, layers, heads)
            ids = random_ids(first, int(config["vocab_size"]), rng)
            hidden_states, attention = forward(config, weights, ids, removed=removed)
            write_case(os.path.join(args.fixtures, str(k + 1 + m)), ids, hidden_states,
                       attention, rollout(attention), removed)
        return 0

    if not args.ids:
        parser.error("give --ids or --fixtures")
    ids = [int(s) for s in args.ids.split(",")]
    if max(ids) >= int(config["vocab_size"]) or min(ids) < 0:
        parser.error(f"ids must lie in [0, {config['vocab_size']})")
    if len(ids) > int(config["max_position_embeddings"]):
        parser.error(f"at most {config['max_position_embeddings']} ids")
    hidden_states, attention = forward(config, weights, ids)
    rollout_matrix = rollout(attention)
    if args.json:
        json.dump({"ids": ids, "hidden_states": hidden_states.tolist(),
                   "attention": attention.tolist(), "rollout": rollout_matrix.tolist()},
                  sys.stdout)
        sys.stdout.write("\n")
        return 0
    layers, heads, n, _ = attention.shape
    print(f"ids: {ids}")
    print("layer head  mean max weight  (1/n = {:.3f})".format(1 / n))
    for layer in range(layers):
        for head in range(heads):
            print(f"{layer:5d} {head:4d}  {attention[layer, head].max(axis=1).mean():.4f}")
    print("rollout:")
    for row in rollout_matrix:
        print(" ".join(f"{v:.3f}" for v in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
