"""A BERT masked language model in plain PyTorch, with Hugging Face BertForMaskedLM names.

The parameter names and semantics (post-LayerNorm encoder, LayerNorm eps 1e-12, erf GELU, the
masked-LM head tied to the word embeddings) follow Hugging Face `BertForMaskedLM`, so that the
state dict saved by `save_hf_folder` loads there unchanged. transformers is not needed.
"""
import json
import math
import os
import shutil

import torch
import torch.nn.functional as F
from torch import nn

DEFAULT_CONFIG = {
    "vocab_size": 30522,
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "intermediate_size": 1024,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "initializer_range": 0.02,
    "hidden_act": "gelu",
    "pad_token_id": 0,
}


class LayerNorm(nn.LayerNorm):
    """nn.LayerNorm that always normalises in float32, also under bfloat16 autocast (whose
    matrix products hand it bfloat16 inputs)."""

    def forward(self, x):
        return super().forward(x.float())


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"],
                                            padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, input_ids, token_type_ids):  # (B, n) each
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)[None]
             + self.token_type_embeddings(token_type_ids))
        return self.dropout(self.LayerNorm(x))  # (B, n, d)


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.num_heads = c["num_attention_heads"]
        self.head_size = d // self.num_heads
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.dropout = nn.Dropout(c["attention_probs_dropout_prob"])

    def split_heads(self, x):  # (B, n, d) -> (B, h, n, d_head)
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.head_size).transpose(1, 2)

    def forward(self, x, additive_mask):  # x (B, n, d), additive_mask (B, 1, 1, n)
        query, key, value = (self.split_heads(f(x)) for f in (self.query, self.key, self.value))
        scores = query @ key.transpose(-1, -2) / math.sqrt(self.head_size)  # (B, h, n, n)
        if additive_mask is not None:
            scores = scores + additive_mask
        attention_probs = scores.float().softmax(dim=-1)  # (B, h, n, n)
        context = self.dropout(attention_probs) @ value  # (B, h, n, d_head)
        b, h, n, dh = context.shape
        return context.transpose(1, 2).reshape(b, n, h * dh), attention_probs


class SelfOutput(nn.Module):
    def __init__(self, c, d_in):
        super().__init__()
        self.dense = nn.Linear(d_in, c["hidden_size"])
        self.LayerNorm = LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = SelfAttention(c)
        self.output = SelfOutput(c, c["hidden_size"])

    def forward(self, x, additive_mask):
        context, probs = self.self(x, additive_mask)
        return self.output(context, x), probs


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(self, x):
        return F.gelu(self.dense(x))  # erf GELU, as BERT's "gelu"


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.intermediate = Intermediate(c)
        self.output = SelfOutput(c, c["intermediate_size"])

    def forward(self, x, additive_mask):
        attended, probs = self.attention(x, additive_mask)
        return self.output(self.intermediate(attended), attended), probs


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))


class Pooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c)
        # Kept for BertModel compatibility; masked-LM training alone never updates it.
        self.pooler = Pooler(c)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        """Returns the last hidden states (B, n, d) and the attention probabilities per layer,
        each (B, h, n, n)."""
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        additive_mask = None
        if attention_mask is not None:
            # Padded keys get a large negative score, so each softmax row ignores them.
            additive_mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        x = self.embeddings(input_ids, token_type_ids)
        all_probs = []
        for layer in self.encoder.layer:
            x, probs = layer(x, additive_mask)
            all_probs.append(probs)
        return x, all_probs


class PredictionTransform(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x):
        return self.LayerNorm(F.gelu(self.dense(x)))


class PredictionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transform = PredictionTransform(c)
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))


class OnlyMLMHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.predictions = PredictionHead(c)


class BertForMaskedLM(nn.Module):
    def __init__(self, config=None):
        super().__init__()
        self.config = dict(DEFAULT_CONFIG, **(config or {}))
        self.bert = Bert(self.config)
        self.cls = OnlyMLMHead(self.config)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        std = self.config["initializer_range"]
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=std)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=std)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def logits(self, hidden):  # (..., d) -> (..., V), decoder tied to the word embeddings
        head = self.cls.predictions
        return F.linear(head.transform(hidden), self.bert.embeddings.word_embeddings.weight,
                        head.bias)

    def forward(self, input_ids, attention_mask=None, masked_positions=None):
        """Logits at the masked positions only ((M, V) for a bool mask (B, n)), or everywhere.

        The vocabulary-wide decoder is by far the largest product in the model; computing it
        only where a token was masked removes most of a training step's cost.
        """
        hidden, _ = self.bert(input_ids, attention_mask)
        if masked_positions is not None:
            hidden = hidden[masked_positions]  # (M, d)
        return self.logits(hidden)


def hf_config(config):
    out = {"architectures": ["BertForMaskedLM"], "model_type": "bert",
           "position_embedding_type": "absolute", "layer_norm_eps": config["layer_norm_eps"],
           "torch_dtype": "float32", "use_cache": True}
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size",
                "hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range",
                "hidden_act", "pad_token_id"):
        out[key] = config[key]
    return out


def hf_state_dict(model):
    """The state dict under BertForMaskedLM names, with the tied decoder written out."""
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    state["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"]
    state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"]
    return state


def save_hf_folder(model, folder, vocab_path):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(hf_config(model.config), f, indent=2)
        f.write("\n")
    shutil.copyfile(vocab_path, os.path.join(folder, "vocab.txt"))
    torch.save(hf_state_dict(model), os.path.join(folder, "pytorch_model.bin"))


def load_hf_folder(folder):
    """Loads a folder written by save_hf_folder (or a Hugging Face BERT with these names)."""
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    model = BertForMaskedLM({k: config[k] for k in DEFAULT_CONFIG if k in config})
    # weights_only: a pytorch_model.bin is a pickle, and a full unpickle of a downloaded one runs
    # whatever code it names; this loads tensors and plain containers only, as the converter does.
    state = torch.load(os.path.join(folder, "pytorch_model.bin"), map_location="cpu",
                       weights_only=True)
    state = {k: v for k, v in state.items()
             if not k.startswith("cls.predictions.decoder.") and not k.endswith("position_ids")}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if not k.startswith(("cls.", "bert.pooler."))]:
        raise ValueError(f"{folder}: missing tensors {missing}, unexpected tensors {unexpected}")
    return model
