"""Converts between a Hugging Face BERT checkpoint folder and the `.attn` model file.

    python3 -m scripts.model.convert_model to-attn HF_DIR OUT.attn [--name NAME] [--precision PLAN]
                                                   [--source TEXT]
    python3 -m scripts.model.convert_model to-hf IN.attn OUT_DIR [--safetensors]
    python3 -m scripts.model.convert_model requantize IN.attn OUT.attn --precision PLAN

to-attn reads config.json, vocab.txt and pytorch_model.bin or model.safetensors (BertModel,
BertForMaskedLM or BertForPreTraining names) and refuses anything the engine cannot run.
to-hf writes config.json, vocab.txt, tokenizer_config.json and pytorch_model.bin (or
model.safetensors) with BertForMaskedLM names, which `BertForMaskedLM.from_pretrained` opens.

requantize rewrites a model file in another precision plan (the compact file the page loads is
made this way from the f32 one, see scripts/training/precision_study.py).

The round trip model file -> Hugging Face folder -> model file is bit-identical: to-hf records
the model's name, provenance and per-tensor precision in config.json under "attn_model_file",
with a hash of the weights; to-attn restores them when the weights still match that hash.
"""

import argparse
import hashlib
import json
import os
import sys

import numpy as np

from scripts.model import modelfile, safetensors_io
from scripts.model.modelfile import ModelFileError

CONFIG_KEY = "attn_model_file"
CONVERTER = "scripts/model/convert_model.py"
# How a checkpoint's names, config and tokenizer settings map to the engine's: one table, which
# the page's reader of checkpoints (web/engine/checkpoint.js) applies too.
CHECKPOINT_TABLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "web",
                                     "engine", "bert_checkpoint.json")
with open(CHECKPOINT_TABLE_PATH, encoding="utf-8") as _table_file:
    CHECKPOINT = json.load(_table_file)
NAMES = CHECKPOINT["names"]
BERT_PREFIX = NAMES["strip_prefix"]
TIED_DECODER_WEIGHT, WORD_EMBEDDINGS = NAMES["tied"][0]
TIED_DECODER_BIAS, MLM_BIAS = NAMES["tied"][1]
assert WORD_EMBEDDINGS == modelfile.EMBEDDING_TENSORS[0][0] and MLM_BIAS == modelfile.MLM_HEAD_TENSORS[-1][0]
# Next-sentence-prediction head of BertForPreTraining checkpoints: not used by the article.
DROPPED_PREFIXES = tuple(NAMES["dropped_prefixes"])


class ConversionError(ValueError):
    pass


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def weights_sha256(tensors):
    """A hash of float32 weights by name, in the given order (file order)."""
    digest = hashlib.sha256()
    for name, values in tensors.items():
        digest.update(name.encode("utf-8") + b"\0")
        digest.update(np.ascontiguousarray(values, dtype="<f4").tobytes())
    return digest.hexdigest()


def float32_for_json(value):
    """The shortest decimal that reads back as the same float32 (1e-12, not 9.99999996e-13)."""
    return float(str(np.float32(value)))


# ---------------------------------------------------------------------------------------------
# Model file -> Hugging Face folder
# ---------------------------------------------------------------------------------------------

def hf_config(model):
    c = model.config
    extra = {"name": model.name, "provenance": model.provenance,
             "weights_sha256": weights_sha256(model.tensors)}
    non_f32 = {name: modelfile.rule_text(entry)
               for name, entry in model.precision.items() if entry[0] != "f32"}
    if non_f32:
        extra["precision"] = non_f32
    return {
        "architectures": ["BertForMaskedLM" if model.has_mlm_head else "BertModel"],
        "model_type": "bert",
        "vocab_size": c.vocab_size,
        "hidden_size": c.hidden_size,
        "num_hidden_layers": c.num_hidden_layers,
        "num_attention_heads": c.num_attention_heads,
        "intermediate_size": c.intermediate_size,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": c.max_position_embeddings,
        "type_vocab_size": c.type_vocab_size,
        "initializer_range": 0.02,
        "layer_norm_eps": float32_for_json(c.layer_norm_eps),
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "torch_dtype": "float32",
        CONFIG_KEY: extra,
    }


def hf_state_dict(model):
    """Ordered {Hugging Face name: float32 array}; BertForMaskedLM names when the masked-LM head
    is present (encoder under `bert.`), BertModel names otherwise."""
    prefix = BERT_PREFIX if model.has_mlm_head else ""
    state = {}
    for name, values in model.tensors.items():
        key = name if name.startswith("cls.") else prefix + name
        state[key] = np.ascontiguousarray(values, dtype=np.float32)
    return state


def write_hf_folder(model, out_dir, use_safetensors=False):
    """Writes a Hugging Face checkpoint folder for `model` (a modelfile.Model)."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(hf_config(model), f, indent=2)
        f.write("\n")
    with open(os.path.join(out_dir, "vocab.txt"), "wb") as f:
        f.write(model.vocab)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        t = model.tokenizer
        json.dump({"tokenizer_class": "BertTokenizer", "do_lower_case": t.do_lower_case,
                   "strip_accents": t.strip_accents, "tokenize_chinese_chars": t.tokenize_chinese_chars,
                   "model_max_length": model.config.max_position_embeddings}, f, indent=2)
        f.write("\n")
    state = hf_state_dict(model)
    # Only one weights file may be present, or readers would have to guess which one is current.
    for stale in ("model.safetensors", "pytorch_model.bin"):
        if os.path.exists(os.path.join(out_dir, stale)):
            os.remove(os.path.join(out_dir, stale))
    if use_safetensors:
        # Like save_pretrained, tied copies are left out: the decoder is the word embeddings.
        safetensors_io.save(os.path.join(out_dir, "model.safetensors"), state,
                            metadata={"format": "pt"})
        return
    import torch
    tensors = {k: torch.from_numpy(v.copy()) for k, v in state.items()}
    if model.has_mlm_head:
        # The same tensor objects, so torch.save stores the tied storage once, as HF does.
        tensors[TIED_DECODER_WEIGHT] = tensors[BERT_PREFIX + WORD_EMBEDDINGS]
        tensors[TIED_DECODER_BIAS] = tensors[MLM_BIAS]
    torch.save(tensors, os.path.join(out_dir, "pytorch_model.bin"))


# ---------------------------------------------------------------------------------------------
# Hugging Face folder -> model file
# ---------------------------------------------------------------------------------------------

def config_from_hf(hf_config_dict, source):
    """A modelfile.BertConfig, or ConversionError naming what the engine cannot run."""
    c = hf_config_dict

    def refuse(message):
        raise ConversionError(f"{source}: {message}; the engine runs only plain BERT encoders "
                              f"(Hugging Face BertModel semantics)")

    rules = CHECKPOINT["config"]
    defaults = rules["defaults"]
    model_type = c.get("model_type", defaults["model_type"])
    if model_type not in rules["model_types"]:
        refuse(f"model_type is {model_type!r}, not 'bert'")
    for key, (only, why) in rules["only"].items():
        value = c.get(key, defaults[key])
        if value != only:
            refuse(f"{key} is {value!r}; {why}")
    if any(c.get(flag) for flag in rules["refused_flags"]):
        refuse("it is configured as a decoder (" + " / ".join(rules["refused_flags"]) + ")")
    missing = [k for k in rules["required"] if k not in c]
    if missing:
        raise ConversionError(f"{source}: config.json lacks {', '.join(missing)}")
    config = modelfile.BertConfig(
        vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
        num_hidden_layers=c["num_hidden_layers"], num_attention_heads=c["num_attention_heads"],
        intermediate_size=c["intermediate_size"],
        max_position_embeddings=c["max_position_embeddings"],
        type_vocab_size=c.get("type_vocab_size", defaults["type_vocab_size"]),
        layer_norm_eps=float(np.float32(c.get("layer_norm_eps", defaults["layer_norm_eps"]))))
    try:
        config.validate()
    except ModelFileError as e:
        raise ConversionError(f"{source}: {e}") from None
    return config


def load_hf_weights(hf_dir):
    """(state: name -> float32 numpy array, weights file path) from the folder."""
    safetensors_name, bin_name = CHECKPOINT["files"]["weights"]  # the first is preferred
    safetensors_path = os.path.join(hf_dir, safetensors_name)
    bin_path = os.path.join(hf_dir, bin_name)
    if os.path.exists(safetensors_path):
        arrays, _ = safetensors_io.load(safetensors_path)
        return {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}, safetensors_path
    if os.path.exists(bin_path):
        import torch
        state = torch.load(bin_path, map_location="cpu", weights_only=True)
        return {k: v.float().numpy() for k, v in state.items()}, bin_path
    raise ConversionError(f"{hf_dir}: no model.safetensors or pytorch_model.bin (sharded "
                          f"checkpoints are not supported)")


def bert_model_weights(state, source):
    """Maps checkpoint names to BertModel names: strips `bert.`, renames gamma/beta, checks
    that the masked-LM decoder is tied and drops it. Returns (weights, dropped names)."""
    weights = {}
    dropped = []
    for key, values in state.items():
        name = key[len(BERT_PREFIX):] if key.startswith(BERT_PREFIX) else key
        for old, new in NAMES["renames"]:
            name = name.replace(old, new)
        if name.endswith(tuple(NAMES["ignored_suffixes"])):
            continue  # a buffer of 0..P-1 that older transformers versions saved
        if name.startswith(DROPPED_PREFIXES):
            dropped.append(key)
            continue
        weights[name] = values
    decoder = weights.pop(TIED_DECODER_WEIGHT, None)
    if decoder is not None:
        embeddings = weights.get(WORD_EMBEDDINGS)
        if embeddings is None or decoder.shape != embeddings.shape or \
                not np.array_equal(decoder, embeddings):
            diff = (float(np.abs(decoder - embeddings).max())
                    if embeddings is not None and decoder.shape == embeddings.shape
                    else "shape differs")
            raise ConversionError(
                f"{source}: {TIED_DECODER_WEIGHT} differs from {WORD_EMBEDDINGS} (max |diff| "
                f"{diff}); the model file stores the masked-LM decoder tied to the word "
                f"embeddings, so an untied head cannot be converted without losing it")
    decoder_bias = weights.pop(TIED_DECODER_BIAS, None)
    if decoder_bias is not None:
        bias = weights.get(MLM_BIAS)
        if bias is None or not np.array_equal(decoder_bias, bias):
            raise ConversionError(f"{source}: {TIED_DECODER_BIAS} differs from {MLM_BIAS}; "
                                  f"Hugging Face ties them, this checkpoint does not")
    return weights, dropped


def read_vocab(hf_dir):
    path = os.path.join(hf_dir, "vocab.txt")
    if not os.path.exists(path):
        raise ConversionError(f"{hf_dir}: no vocab.txt (the WordPiece vocabulary is required)")
    with open(path, "rb") as f:
        vocab = f.read().replace(b"\r\n", b"\n")
    if vocab and not vocab.endswith(b"\n"):
        vocab += b"\n"
    return vocab, path


# The special tokens the engine's tokenizer finds in the vocabulary by these texts.
SPECIAL_TOKENS = CHECKPOINT["tokenizer"]["special_tokens"]


def read_tokenizer(hf_dir):
    """The checkpoint's tokenizer settings (modelfile.TokenizerSettings) from its
    tokenizer_config.json; without one, BertTokenizer's defaults (uncased). Refused: a tokenizer
    that is not BERT's WordPiece, and special tokens other than BERT's."""
    path = os.path.join(hf_dir, "tokenizer_config.json")
    if not os.path.exists(path):
        return modelfile.TokenizerSettings()
    with open(path, encoding="utf-8") as f:
        settings = json.load(f)
    if not isinstance(settings, dict):
        raise ConversionError(f"{path}: not a JSON object")
    kind = settings.get("tokenizer_class")
    if kind is not None and kind not in CHECKPOINT["tokenizer"]["classes"]:
        raise ConversionError(f"{path}: tokenizer_class is {kind!r}; this engine has BERT's WordPiece "
                              f"tokenizer only (BertTokenizer)")
    for key, text in SPECIAL_TOKENS.items():
        value = settings.get(key, text)
        if isinstance(value, dict):  # {"content": "[CLS]", ...}, as newer transformers write it
            value = value.get("content")
        if value != text:
            raise ConversionError(f"{path}: {key} is {value!r}; this engine's tokenizer uses {text}")
    try:
        return modelfile.TokenizerSettings.from_config(settings, path)
    except modelfile.ModelFileError as e:
        raise ConversionError(str(e)) from e


def model_from_hf(hf_dir, name=None, source=None, extra_provenance=None):
    """(modelfile.Model, restored precision plan or None) from a Hugging Face folder.
    extra_provenance: a dict added to the provenance of a fresh conversion (training details,
    licence)."""
    config_path = os.path.join(hf_dir, "config.json")
    if not os.path.exists(config_path):
        raise ConversionError(f"{hf_dir}: no config.json; is this a Hugging Face checkpoint "
                              f"folder?")
    with open(config_path, encoding="utf-8") as f:
        hf = json.load(f)
    config = config_from_hf(hf, config_path)
    tokenizer = read_tokenizer(hf_dir)
    vocab, vocab_path = read_vocab(hf_dir)
    state, weights_path = load_hf_weights(hf_dir)
    weights, dropped = bert_model_weights(state, weights_path)

    try:
        with_pooler, with_mlm_head = modelfile.optional_groups_present(weights)
    except ModelFileError as e:
        raise ConversionError(f"{weights_path}: {e}") from None
    expected = modelfile.expected_tensors(config, with_pooler, with_mlm_head)
    unknown = sorted(set(weights) - {n for n, _ in expected})
    if unknown:
        raise ConversionError(
            f"{weights_path}: tensors the engine has no place for: {', '.join(unknown[:5])}"
            f"{' ...' if len(unknown) > 5 else ''}; only BertModel, its pooler and the "
            f"masked-LM head are converted (a task head, a classifier or a question-answering one, is left out)")
    for tensor_name, shape in expected:
        if tensor_name not in weights:
            raise ConversionError(f"{weights_path}: missing tensor {tensor_name} "
                                  f"(expected shape {list(shape)} from config.json)")
        if tuple(weights[tensor_name].shape) != shape:
            raise ConversionError(f"{weights_path}: {tensor_name} has shape "
                                  f"{list(weights[tensor_name].shape)}, config.json implies "
                                  f"{list(shape)}")
    tensors = {tensor_name: weights[tensor_name] for tensor_name, _ in expected}

    plan = None
    recorded = hf.get(CONFIG_KEY)
    if recorded and recorded.get("weights_sha256") == weights_sha256(tensors):
        model_name = name or recorded["name"]
        provenance = recorded["provenance"]
        precision = recorded.get("precision", {})
        plan = modelfile.parse_plan("\n".join(f"{tensor_name}={rule}"
                                               for tensor_name, rule in precision.items()))
    else:
        model_name = name or hf.get("_name_or_path") or os.path.basename(
            os.path.abspath(hf_dir))
        record = {
            "source": source or os.path.basename(os.path.abspath(hf_dir)),
            "files": {os.path.basename(p): sha256_file(p)
                      for p in (config_path, vocab_path, weights_path)},
            "converter": f"{CONVERTER} to-attn",
        }
        if dropped:
            record["dropped_tensors"] = dropped
        record.update(extra_provenance or {})
        if recorded:
            # The weights changed since to-hf wrote this folder (fine-tuned, edited): the old
            # provenance describes an ancestor, not these weights.
            record["derived_from"] = {"name": recorded.get("name"),
                                      "provenance": json.loads(recorded.get("provenance", "{}"))}
        provenance = json.dumps(record, sort_keys=True)
    model = modelfile.Model(config, model_name, provenance, vocab, tensors, tokenizer=tokenizer)
    return model, plan


# ---------------------------------------------------------------------------------------------

def to_attn(args):
    extra = None
    if args.provenance:
        with open(args.provenance, encoding="utf-8") as f:
            extra = json.load(f)
        if not isinstance(extra, dict):
            raise ConversionError(f"{args.provenance}: provenance must be a JSON object")
    model, restored_plan = model_from_hf(args.hf_dir, name=args.name, source=args.source,
                                         extra_provenance=extra)
    plan = modelfile.parse_plan(args.precision) if args.precision else restored_plan
    data = modelfile.write(args.out, model, plan)
    print(f"wrote {args.out} ({len(data):,} bytes): {model.name}, "
          f"{len(model.tensors)} tensors")


def to_hf(args):
    model = modelfile.read(args.model_file)
    write_hf_folder(model, args.out_dir, use_safetensors=args.safetensors)
    weights = "model.safetensors" if args.safetensors else "pytorch_model.bin"
    print(f"wrote {args.out_dir} ({weights}): {model.name}")


def write_requantized(model, out, plan_text, source, drop_pooler=False):
    """Writes `model` (a modelfile.Model, normally read from an f32 file) with the precision plan
    plan_text, recording the plan and the source file in the provenance. drop_pooler leaves the
    pooler out (BertForMaskedLM has none; nothing the engine computes reads it). Returns the
    bytes."""
    record = json.loads(model.provenance)
    record["requantized"] = {"from": os.path.basename(source), "from_sha256": sha256_file(source),
                             "precision": plan_text}
    tensors = model.tensors
    if drop_pooler and model.has_pooler:
        tensors = {k: v for k, v in tensors.items() if not k.startswith("pooler.")}
        record["requantized"]["dropped"] = "pooler"
    compact = modelfile.Model(model.config, model.name, json.dumps(record, sort_keys=True),
                              model.vocab, tensors, tokenizer=model.tokenizer)
    return modelfile.write(out, compact, modelfile.parse_plan(plan_text))


def requantize(args):
    model = modelfile.read(args.model_file)
    lossy = sorted({entry[0] for entry in model.precision.values()} - {"f32"})
    if lossy:
        print(f"warning: {args.model_file} already holds {'+'.join(lossy)} tensors; requantizing "
              f"compounds their error (start from the f32 file)", file=sys.stderr)
    data = write_requantized(model, args.out, args.precision, args.model_file,
                             drop_pooler=args.drop_pooler)
    print(f"wrote {args.out} ({len(data):,} bytes): {model.name}, precision {args.precision}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m scripts.model.convert_model",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("to-attn", help="Hugging Face folder -> model file")
    p.add_argument("hf_dir")
    p.add_argument("out")
    p.add_argument("--name", help="display name (default: config _name_or_path or folder name)")
    p.add_argument("--precision", help="precision plan, e.g. '*.weight=int8:row,*=f32' or "
                   "@FILE (default f32, or the plan recorded by to-hf)")
    p.add_argument("--source", help="where the checkpoint came from, for the provenance "
                   "(default: the folder name)")
    p.add_argument("--provenance", help="JSON file whose object is added to the provenance "
                   "(corpus, training, licence)")
    p.set_defaults(run=to_attn)
    p = sub.add_parser("to-hf", help="model file -> Hugging Face folder")
    p.add_argument("model_file")
    p.add_argument("out_dir")
    p.add_argument("--safetensors", action="store_true",
                   help="write model.safetensors instead of pytorch_model.bin")
    p.set_defaults(run=to_hf)
    p = sub.add_parser("requantize", help="model file -> model file in another precision plan")
    p.add_argument("model_file")
    p.add_argument("out")
    p.add_argument("--precision", required=True, help="precision plan, e.g. "
                   "'*LayerNorm*=f32,*.weight=rans:row:1023,*=f32' or @FILE")
    p.add_argument("--drop-pooler", action="store_true",
                   help="leave the pooler out (BertForMaskedLM has none; the engine never reads it)")
    p.set_defaults(run=requantize)
    args = parser.parse_args(argv)
    if getattr(args, "precision", None) and args.precision.startswith("@"):
        with open(args.precision[1:], encoding="utf-8") as f:
            args.precision = f.read()
    try:
        args.run(args)
    except (ConversionError, ModelFileError, OSError, json.JSONDecodeError,
            safetensors_io.SafetensorsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
