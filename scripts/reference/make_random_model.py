"""Writes a random-weight BERT of any shape as a model file and/or a Hugging Face folder.

    python3 -m scripts.reference.make_random_model --preset tiny --seed 1 --attn OUT.attn \
        --hf OUT_DIR [--safetensors]
    python3 -m scripts.reference.make_random_model --preset mini --layers 2 --hf OUT_DIR

Presets: tiny (2 layers, hidden 32, 4 heads, intermediate 64, 64 positions) and mini (the
bert-mini shape: 4/256/4/1024/512); both use the real 30,522-entry vocabulary. Parity tests are
only as strong as the attention they compare: near-uniform rows would hide errors, so query and
key weights are scaled per head to make some heads peaky (a row's largest weight well above 1/n),
and the other weights keep each sub-layer's output of order one, so that every operation
(GELU, LayerNorm, residuals) moves the hidden states. The script prints the mean largest
attention weight of each head to show it.
"""

import argparse
import json
import os
import sys

import numpy as np

from scripts.model import convert_model, modelfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB_PATH = os.path.join(ROOT, "model_data", "vocab.txt")

PRESETS = {
    "tiny": dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=64),
    "mini": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4,
                 intermediate_size=1024, max_position_embeddings=512),
}
# Typical size of the attention scores q.k/sqrt(d_head) (the heads are scaled around it): with
# LayerNorm'd inputs and query/key weights of variance c/d the scores have standard deviation
# about c times the head's scale squared.
SCORE_SCALE = 3.0


def random_tensors(config, rng, with_pooler=True, with_mlm_head=True):
    """{name: float32 array} for every tensor of the config, in file order."""
    d, heads = config.hidden_size, config.num_attention_heads
    d_head = d // heads
    # Head h's query/key rows are scaled by head_scale[h]: from broad heads to peaky ones. Much
    # peakier heads (scale 1.5) pushed the float32 engine's attention error to the 1e-5 parity
    # bar at 500 tokens; up to 1.1 it stays near 2.5e-6 while the peakiest head still puts
    # more than half of many rows on one token.
    head_scale = np.repeat(np.linspace(0.6, 1.1, heads), d_head)[:, None]  # (d, 1)
    tensors = {}
    for name, shape in modelfile.expected_tensors(config, with_pooler, with_mlm_head):
        if name == "embeddings.word_embeddings.weight":
            values = rng.normal(0.0, 1.0, shape)
        elif name.endswith(("position_embeddings.weight", "token_type_embeddings.weight")):
            values = rng.normal(0.0, 0.5, shape)
        elif name.endswith("LayerNorm.weight"):
            values = 1.0 + rng.normal(0.0, 0.1, shape)
        elif name.endswith(("query.weight", "key.weight")):
            values = rng.normal(0.0, np.sqrt(SCORE_SCALE / d), shape) * head_scale
        elif name.endswith(".weight"):
            values = rng.normal(0.0, 1.0 / np.sqrt(shape[1]), shape)  # (out, in)
        else:
            values = rng.normal(0.0, 0.1, shape)
        tensors[name] = values.astype(np.float32)
    return tensors


def make_model(preset, seed, overrides, with_pooler=True, with_mlm_head=True):
    with open(VOCAB_PATH, "rb") as f:
        vocab = f.read()
    shape = dict(PRESETS[preset])
    shape.update({k: v for k, v in overrides.items() if v is not None})
    config = modelfile.BertConfig(vocab_size=vocab.count(b"\n"), type_vocab_size=2,
                                  layer_norm_eps=1e-12, **shape)
    config.validate()
    rng = np.random.default_rng(seed)
    tensors = random_tensors(config, rng, with_pooler, with_mlm_head)
    name = (f"random-{preset}-L{config.num_hidden_layers}-H{config.hidden_size}-"
            f"A{config.num_attention_heads}-seed{seed}")
    provenance = json.dumps({
        "source": "random weights for tests; not a trained model",
        "generator": "scripts/reference/make_random_model.py",
        "preset": preset, "seed": seed,
        "licence": "none needed (random numbers)",
    }, sort_keys=True)
    return modelfile.Model(config, name, provenance, vocab, tensors)


def attention_peakiness(model, n, seed):
    """(L, H) mean over rows of the largest attention weight, on random ids of length n."""
    import torch
    from scripts.reference import reference_bert
    torch.set_num_threads(1)
    weights = {k: torch.from_numpy(v) for k, v in model.tensors.items()}
    ids = reference_bert.random_ids(n, model.config.vocab_size, np.random.default_rng(seed))
    config = dict(model.config.__dict__)
    _, attention = reference_bert.forward(config, weights, ids, dtype=torch.float32)
    return attention.max(axis=-1).mean(axis=-1)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m scripts.reference.make_random_model",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    parser.add_argument("--seed", type=int, default=0)
    for key in ("layers", "hidden", "heads", "intermediate", "positions"):
        parser.add_argument(f"--{key}", type=int, help=f"override the preset's {key}")
    parser.add_argument("--attn", help="write the model file here")
    parser.add_argument("--hf", help="write a Hugging Face folder here")
    parser.add_argument("--safetensors", action="store_true",
                        help="write model.safetensors (default pytorch_model.bin)")
    parser.add_argument("--precision", help="precision plan for the model file (default f32)")
    parser.add_argument("--no-pooler", action="store_true")
    parser.add_argument("--no-mlm-head", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="do not print attention peakiness")
    args = parser.parse_args(argv)
    if not (args.attn or args.hf):
        parser.error("give --attn and/or --hf")

    overrides = {"num_hidden_layers": args.layers, "hidden_size": args.hidden,
                 "num_attention_heads": args.heads, "intermediate_size": args.intermediate,
                 "max_position_embeddings": args.positions}
    try:
        model = make_model(args.preset, args.seed, overrides, not args.no_pooler,
                           not args.no_mlm_head)
        if args.attn:
            plan = modelfile.parse_plan(args.precision) if args.precision else None
            modelfile.write(args.attn, model, plan)
    except modelfile.ModelFileError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.hf:
        convert_model.write_hf_folder(model, args.hf, use_safetensors=args.safetensors)
    if not args.quiet:
        n = min(32, model.config.max_position_embeddings)
        peak = attention_peakiness(model, n, args.seed)
        print(f"{model.name}: mean largest attention weight per head, n = {n} "
              f"(uniform would be {1 / n:.3f})")
        for layer, row in enumerate(peak):
            print(f"  layer {layer}: " + "  ".join(f"{v:.3f}" for v in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
