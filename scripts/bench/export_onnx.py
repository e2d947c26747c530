"""Exports a model file's encoder to ONNX, for the side-by-side benchmark with ONNX Runtime Web
(scripts/bench/bench_ort.mjs).

The graph is the repository's own PyTorch BERT (scripts/reference/bert_torch.py) loaded with the
model file's weights as the engine sees them (every tensor dequantised to float32 by the Python
reader, scripts/model/modelfile.py), in eval mode: input `input_ids` (1, n) int64, token type 0
everywhere and no padding mask, as the engine runs a sentence; outputs `last_hidden_state`
(1, n, d) and `attention_0` ... `attention_{L-1}` (1, H, n, n), the attention probabilities of
every layer. The sequence length n is dynamic. Opset 14.

    /usr/bin/python3 -m scripts.bench.export_onnx model_data/explainer-mini.compact.attn OUT.onnx
"""

import argparse
import json
import sys

import numpy as np
import torch

from scripts.model import modelfile
from scripts.reference import bert_torch

OPSET = 14


class EncoderGraph(torch.nn.Module):
    """bert_torch.Bert with a flat output tuple: the last hidden state, then each layer's
    attention probabilities."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids):
        hidden, probs = self.bert(input_ids)
        return (hidden, *probs)


def torch_model(model):
    """bert_torch.Bert with the weights of `model` (a modelfile.Model), in eval mode."""
    c = model.config
    config = {"vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
              "num_hidden_layers": c.num_hidden_layers,
              "num_attention_heads": c.num_attention_heads,
              "intermediate_size": c.intermediate_size,
              "max_position_embeddings": c.max_position_embeddings,
              "type_vocab_size": c.type_vocab_size, "layer_norm_eps": c.layer_norm_eps}
    full = bert_torch.BertForMaskedLM(config)
    bert = full.bert
    state = {name: torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32))
             for name, values in model.tensors.items() if not name.startswith("cls.")}
    missing, unexpected = bert.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if not k.startswith("pooler.")]:
        raise ValueError(f"tensors missing {missing}, unexpected {unexpected}")
    return bert.eval()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="an .attn model file")
    parser.add_argument("out", help="the .onnx file to write")
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    model = modelfile.read(args.model)
    graph = EncoderGraph(torch_model(model))
    layers = model.config.num_hidden_layers
    attention_names = [f"attention_{l}" for l in range(layers)]
    example = torch.tensor([[101, 1996, 4937, 2938, 102]], dtype=torch.int64)
    dynamic = {"input_ids": {1: "n"}, "last_hidden_state": {1: "n"}}
    dynamic.update({name: {2: "n", 3: "n"} for name in attention_names})
    with torch.no_grad():
        torch.onnx.export(graph, (example,), args.out, opset_version=OPSET,
                          input_names=["input_ids"],
                          output_names=["last_hidden_state", *attention_names],
                          dynamic_axes=dynamic, do_constant_folding=True)
        # A check the benchmark can repeat: the same ids through the torch graph.
        outputs = graph(example)
    summary = {"model": args.model, "onnx": args.out, "opset": OPSET, "layers": layers,
               "example_ids": example[0].tolist(),
               "example_attention_0_row_0": outputs[1][0, 0, 0].tolist()}
    json.dump(summary, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
