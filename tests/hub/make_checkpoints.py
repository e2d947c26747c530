"""Writes the checkpoints that tests/hub/mock_hub.mjs serves as a local Hugging Face hub.

    /usr/bin/python3 tests/hub/make_checkpoints.py OUT_DIR      (run from the repository root)

For each repository it writes OUT_DIR/<owner>/<name>/, a Hugging Face checkpoint folder with the
files the hub would list (.gitattributes, README.md, config.json, vocab.txt,
tokenizer_config.json, the weights), and for each repository the page must load,
OUT_DIR/<owner>/<name>.attn made by the project's converter (scripts/model/convert_model.py
to-attn), which the browser test compares the page's attention with (build/native/attention-cli
analyze --model FILE.attn --json TEXT). OUT_DIR/repos.json describes them all; see SCHEMA below.

Good repositories (expect.load true): random BERTs in the BertForMaskedLM, BertForPreTraining and
BertModel layouts, as safetensors, as torch zip pickles (with a tied decoder and the old
position_ids buffer), in float16, cased, and with both weights files.
Refused repositories (expect.load false, expect.message a substring the page's refusal must
contain, case-insensitively; expect.messageAny looser alternatives): a GPT-2, a gated repository,
an HTML page in place of the weights, a wrong SHA-256 in the listing, a download the server cuts
in half, hostile pickles (os.system, eval, subprocess.Popen, REDUCE on torch.FloatStorage,
getattr, a storage key with '..', a zip entry with '..', a storage shorter than its tensor) and
hostile safetensors (overlapping tensors, a header declaring 3 GB).

The hostile pickles' payloads would run `curl -s http://127.0.0.1:CANARY_PORT/canary?from=NAME`
(CANARY_PORT is fixed, recorded in repos.json as canaryPort); mock_hub.mjs listens there and
counts the hits, so a test can check that loading a hostile file ran nothing. Nothing here loads
them except with torch.load(weights_only=True), which must refuse them.

Deterministic (fixed seeds, fixed zip timestamps) and idempotent: when repos.json exists with this
script's version stamp and every file it lists is present with its size, nothing is written. A
lock file serialises concurrent runs on the same OUT_DIR.

SCHEMA of repos.json:
    {"version": "hub-fixtures/1:<16 hex: sha256 of this script>",
     "canaryPort": 47999, "canaryUrl": "http://127.0.0.1:47999/canary",
     "repos": [{
        "id": "test-org/bert-mini-st",     # owner/name
        "dir": "test-org/bert-mini-st",    # folder under OUT_DIR
        "sha": "<40 hex>",                 # the fake commit: X-Repo-Commit, revision/<sha>
        "gated": false,                    # true: info is served (gated "manual"), files 401
        "truncate": false,                 # true: the CDN cuts an LFS file at file.truncateAt
        "info": {"pipeline_tag", "library_name", "tags", "config": {"architectures",
                 "model_type"}, "safetensors"?: {"parameters": {"F32": N}, "total": N}},
        "files": [{"rfilename": "model.safetensors",
                   "path": "test-org/bert-mini-st/model.safetensors",  # under OUT_DIR
                   "size": N,               # the listing's size (= lfs.size for LFS files)
                   "blobId": "<40 hex>",    # git blob id (of the LFS pointer for LFS files)
                   "lfs": {"sha256": "<64 hex>", "size": N, "pointerSize": 134} | null,
                   "servedSize": N, "servedSha256": "<64 hex>",  # the bytes on disk
                   "truncateAt"?: N}],     # only in the truncated repository
        "expect": {"load": true, "weights": "model.safetensors", "attn": "test-org/x.attn",
                   "dtype": "F32", "doLowerCase": true, "layers": 2, "hidden": 64, "heads": 2,
                   "sameWeightsAs"?: "test-org/..."}
                | {"load": false, "message": "gpt2", "messageAny": ["gpt2"], "stage": "config"},
        "note": "what the repository is for"}]}
"""

import collections
import contextlib
import fcntl
import hashlib
import io
import json
import os
import shutil
import struct
import sys
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from scripts.model import convert_model, modelfile, safetensors_io  # noqa: E402

OWNER = "test-org"
CANARY_PORT = 47999
CANARY_URL = f"http://127.0.0.1:{CANARY_PORT}/canary"
VOCAB_PATH = os.path.join(ROOT, "model_data", "vocab.txt")
with open(os.path.abspath(__file__), "rb") as _f:
    VERSION = "hub-fixtures/1:" + hashlib.sha256(_f.read()).hexdigest()[:16]

SHAPE_A = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128,
               max_position_embeddings=512)
SHAPE_B = dict(num_hidden_layers=4, hidden_size=128, num_attention_heads=4, intermediate_size=256,
               max_position_embeddings=512)
TRANSFORMERS_VERSION = "4.41.2"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)

GITATTRIBUTES = b"""*.7z filter=lfs diff=lfs merge=lfs -text
*.arrow filter=lfs diff=lfs merge=lfs -text
*.bin filter=lfs diff=lfs merge=lfs -text
*.bz2 filter=lfs diff=lfs merge=lfs -text
*.ckpt filter=lfs diff=lfs merge=lfs -text
*.ftz filter=lfs diff=lfs merge=lfs -text
*.gz filter=lfs diff=lfs merge=lfs -text
*.h5 filter=lfs diff=lfs merge=lfs -text
*.joblib filter=lfs diff=lfs merge=lfs -text
*.msgpack filter=lfs diff=lfs merge=lfs -text
*.onnx filter=lfs diff=lfs merge=lfs -text
*.pb filter=lfs diff=lfs merge=lfs -text
*.pt filter=lfs diff=lfs merge=lfs -text
*.pth filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
*.tar filter=lfs diff=lfs merge=lfs -text
*.tflite filter=lfs diff=lfs merge=lfs -text
*.zip filter=lfs diff=lfs merge=lfs -text
"""

HTML_PAGE = b"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign in to continue</title>
<style>body{font-family:sans-serif;margin:4em auto;max-width:30em}</style></head>
<body>
<h1>Sign in to the network</h1>
<p>This network requires you to accept its terms before you can reach the internet.</p>
<form method="post" action="/login"><label>Room number <input name="room"></label>
<button>Accept and continue</button></form>
</body>
</html>
"""


# ---------------------------------------------------------------------------------------------
# Random models
# ---------------------------------------------------------------------------------------------

def read_vocab():
    with open(VOCAB_PATH, "rb") as f:
        return f.read()


def random_model(repo_id, shape, seed, vocab, with_pooler, with_mlm_head,
                 tokenizer=modelfile.TokenizerSettings()):
    """A modelfile.Model with the brief's random weights: matrices and embeddings N(0, 0.02),
    LayerNorm weights 1 + N(0, 0.1), biases N(0, 0.02), and query/key weights N(0, 0.2 *
    sqrt(64 / hidden)) so that attention rows are clearly not uniform."""
    config = modelfile.BertConfig(vocab_size=vocab.count(b"\n"), type_vocab_size=2,
                                  layer_norm_eps=1e-12, **shape)
    config.validate()
    rng = np.random.default_rng(seed)
    qk_std = 0.2 * np.sqrt(64 / config.hidden_size)
    tensors = {}
    for name, dims in modelfile.expected_tensors(config, with_pooler, with_mlm_head):
        if name.endswith("LayerNorm.weight"):
            values = 1.0 + rng.normal(0.0, 0.1, dims)
        elif name.endswith(("query.weight", "key.weight")):
            values = rng.normal(0.0, qk_std, dims)
        else:
            values = rng.normal(0.0, 0.02, dims)
        tensors[name] = values.astype(np.float32)
    provenance = json.dumps({"source": "random weights for the hub tests; not a trained model",
                             "generator": "tests/hub/make_checkpoints.py", "seed": seed},
                            sort_keys=True)
    return modelfile.Model(config, repo_id, provenance, vocab, tensors, tokenizer=tokenizer)


def fix_config(folder, architectures, torch_dtype="float32"):
    """Makes write_hf_folder's config.json look like one from the hub: no attn_model_file record
    (which only this project's to-hf writes), the architectures, transformers_version."""
    path = os.path.join(folder, "config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config.pop(convert_model.CONFIG_KEY, None)
    config["architectures"] = architectures
    config["torch_dtype"] = torch_dtype
    config["transformers_version"] = TRANSFORMERS_VERSION
    config["use_cache"] = True
    write_json(path, config)
    return config


def write_json(path, value, sort_keys=True):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=sort_keys)
        f.write("\n")


def write_common(folder, repo_id, card_extra=""):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".gitattributes"), "wb") as f:
        f.write(GITATTRIBUTES)
    with open(os.path.join(folder, "README.md"), "w", encoding="utf-8") as f:
        f.write(f"---\nlicense: apache-2.0\nlibrary_name: transformers\n---\n\n# {repo_id}\n\n"
                f"Random weights for the tests of the attention explainer's hub loader "
                f"(tests/hub/make_checkpoints.py); not a trained model.\n{card_extra}")


def write_bert_folder(folder, repo_id, model, weights, architectures):
    """config.json, vocab.txt, tokenizer_config.json and weights ('safetensors' or 'bin') by
    write_hf_folder, plus .gitattributes and README.md; returns the config."""
    write_common(folder, repo_id)
    convert_model.write_hf_folder(model, folder, use_safetensors=(weights == "safetensors"))
    return fix_config(folder, architectures)


def torch_save_deterministic(obj, path):
    """torch.save, with any per-save random record (newer torch's .data/serialization_id) fixed."""
    import torch
    torch.save(obj, path)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    if any(n.endswith(".data/serialization_id") for n in names):
        rewrite_zip(path, path, replace={n: b"0" * 20 for n in names
                                         if n.endswith(".data/serialization_id")})


def rewrite_zip(src, dst, replace=None, insert_after=None):
    """Copies the zip src to dst (ZIP_STORED, fixed timestamps) with entries replaced
    ({name: bytes}) and new entries inserted after a given one ({after: [(name, bytes)]})."""
    replace = replace or {}
    insert_after = insert_after or {}
    with zipfile.ZipFile(src) as z:
        entries = [(n, replace.get(n, z.read(n))) for n in z.namelist()]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, ZIP_DATE), data)
            for extra_name, extra in insert_after.get(name, ()):
                z.writestr(zipfile.ZipInfo(extra_name, ZIP_DATE), extra)
    with open(dst, "wb") as f:
        f.write(out.getvalue())


# ---------------------------------------------------------------------------------------------
# Crafted pickles (protocol 2, the opcodes torch.save writes)
# ---------------------------------------------------------------------------------------------

def p_str(text):
    raw = text.encode("utf-8")
    return b"X" + struct.pack("<I", len(raw)) + raw


def p_int(n):
    if 0 <= n < 256:
        return b"K" + bytes([n])
    if 0 <= n < 65536:
        return b"M" + struct.pack("<H", n)
    if -2**31 <= n < 2**31:
        return b"J" + struct.pack("<i", n)
    raw = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw  # LONG1


def p_global(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def p_tuple(items):
    items = list(items)
    if len(items) <= 3:
        return b"".join(items) + (b")", b"\x85", b"\x86", b"\x87")[len(items)]
    return b"(" + b"".join(items) + b"t"


def p_call(func, args):
    return func + p_tuple(args) + b"R"


def p_persid(storage_class, key, numel):
    return b"(" + p_str("storage") + p_global("torch", storage_class) + p_str(key) + \
        p_str("cpu") + p_int(numel) + b"tQ"


def p_tensor(storage, shape, offset=0):
    stride = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    return p_call(p_global("torch._utils", "_rebuild_tensor_v2"),
                  [storage, p_int(offset), p_tuple(p_int(s) for s in shape),
                   p_tuple(p_int(s) for s in stride), b"\x89",
                   p_call(p_global("collections", "OrderedDict"), [])])


def state_dict_pickle(entries, payload=None):
    """A torch state dict pickle: an OrderedDict of (name, tensor pickle bytes), with an
    optional first item ('payload', payload bytes)."""
    items = [(p_str("payload") + payload)] if payload is not None else []
    items += [p_str(name) + tensor for name, tensor in entries]
    return b"\x80\x02" + p_call(p_global("collections", "OrderedDict"), []) + b"(" + \
        b"".join(items) + b"u."


def storage_layout(state):
    """[(name, storage key, numel, shape)] as torch.save numbers storages: in order of first
    use, a tied tensor reusing its storage's key."""
    keys = {}
    layout = []
    for name, tensor in state.items():
        ptr = tensor.data_ptr()
        if ptr not in keys:
            keys[ptr] = str(len(keys))
        layout.append((name, keys[ptr], tensor.numel(), tuple(tensor.shape)))
    return layout


def canary_cmd(tag):
    return f"curl -s {CANARY_URL}?from={tag}"


def payload_for(kind, tag):
    url = f"{CANARY_URL}?from={tag}"
    if kind == "os-system":
        return p_call(p_global("os", "system"), [p_str(canary_cmd(tag))])
    if kind == "eval":
        return p_call(p_global("builtins", "eval"),
                      [p_str(f"__import__('os').system({canary_cmd(tag)!r})")])
    if kind == "popen":
        argv = b"](" + p_str("curl") + p_str("-s") + p_str(url) + b"e"
        return p_call(p_global("subprocess", "Popen"), [argv])
    if kind == "getattr":
        os_module = p_call(p_global("builtins", "__import__"), [p_str("os")])
        system = p_call(p_global("builtins", "getattr"), [os_module, p_str("system")])
        return system + p_tuple([p_str(canary_cmd(tag))]) + b"R"
    raise ValueError(kind)


def write_hostile_bin(folder, model, kind, tag):
    """pytorch_model.bin: a real torch.save (into a buffer, so its records are under
    'archive/') of the model's BertForMaskedLM state dict with the tied decoder, whose
    archive/data.pkl is replaced by a crafted pickle (and, for some kinds, a data record
    replaced or an entry added), rewritten with zipfile, ZIP_STORED."""
    import torch
    state = convert_model.hf_state_dict(model)
    tensors = collections.OrderedDict((k, torch.from_numpy(v.copy())) for k, v in state.items())
    tensors[convert_model.TIED_DECODER_WEIGHT] = tensors["bert." + convert_model.WORD_EMBEDDINGS]
    tensors[convert_model.TIED_DECODER_BIAS] = tensors[convert_model.MLM_BIAS]
    buf = io.BytesIO()
    torch.save(tensors, buf)
    base = os.path.join(folder, "base.zip")
    with open(base, "wb") as f:
        f.write(buf.getvalue())
    layout = storage_layout(tensors)
    victim = "bert.encoder.layer.0.attention.self.query.weight"  # 64 x 64

    entries, replace, insert_after, payload = [], {}, {}, None
    for name, key, numel, shape in layout:
        storage = p_persid("FloatStorage", key, numel)
        if kind == "persid" and key == "0":
            storage = p_persid("FloatStorage", "../../../etc/passwd", numel)
        elif kind == "short-storage" and name == victim:
            storage = p_persid("FloatStorage", key, 4)
            replace[f"archive/data/{key}"] = np.arange(4, dtype="<f4").tobytes()
        elif kind == "reduce" and name == victim:
            # REDUCE on torch.FloatStorage: the global is one a state dict names (inside
            # persistent ids), but calling it allocates whatever the pickle asks (2^36 floats).
            storage = p_call(p_global("torch", "FloatStorage"), [p_int(2 ** 36)])
        entries.append((name, p_tensor(storage, shape)))
    if kind in ("os-system", "eval", "popen", "getattr"):
        payload = payload_for(kind, tag)
    if kind == "dotdot":
        insert_after["archive/data.pkl"] = [("archive/../evil",
                                             f"#!/bin/sh\n{canary_cmd(tag)}\n".encode())]
    replace["archive/data.pkl"] = state_dict_pickle(entries, payload)
    path = os.path.join(folder, "pytorch_model.bin")
    rewrite_zip(base, path, replace=replace, insert_after=insert_after)
    os.remove(base)
    return path


def check_clean_pickle_writer(folder, model):
    """The crafted pickles' writer, without a defect, gives a file torch.load(weights_only=True)
    reads back to the model's weights: the hostile files differ from a valid one only where
    intended."""
    import torch
    os.makedirs(folder, exist_ok=True)
    path = write_hostile_bin(folder, model, "clean", "clean")
    state = torch.load(path, map_location="cpu", weights_only=True)
    expected = convert_model.hf_state_dict(model)
    for name, values in expected.items():
        assert np.array_equal(state[name].numpy(), values), name
    assert state[convert_model.TIED_DECODER_WEIGHT].data_ptr() == \
        state["bert." + convert_model.WORD_EMBEDDINGS].data_ptr()
    shutil.rmtree(folder)


# ---------------------------------------------------------------------------------------------
# Crafted safetensors
# ---------------------------------------------------------------------------------------------

def safetensors_header(data):
    (n,) = struct.unpack_from("<Q", data, 0)
    return json.loads(data[8:8 + n]), 8 + n


def pack_safetensors(header, payload):
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + payload


def overlapping_safetensors(clean, victim="bert.embeddings.LayerNorm.bias", overlap=128):
    """The clean file with `victim` starting `overlap` bytes inside the tensor before it (whose
    bytes it shares); the later tensors move down so the data has no hole."""
    header, start = safetensors_header(clean)
    data = clean[start:]
    meta = header.pop("__metadata__", None)
    order = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    out_header = {"__metadata__": meta} if meta else {}
    chunks, offset = [], 0
    for name in order:
        begin, end = header[name]["data_offsets"]
        raw = data[begin:end]
        if name == victim:
            out_header[name] = dict(header[name], data_offsets=[offset - overlap,
                                                                offset - overlap + len(raw)])
            raw = raw[overlap:]
        else:
            out_header[name] = dict(header[name], data_offsets=[offset, offset + len(raw)])
        chunks.append(raw)
        offset += len(raw)
    return pack_safetensors(out_header, b"".join(chunks))


def huge_safetensors(vocab_size):
    """A header declaring a 3 GB F32 tensor, followed by 256 bytes."""
    width = 24576  # 30522 x 24576 x 4 bytes = 3,000,434,688
    header = {"__metadata__": {"format": "pt"},
              "bert.embeddings.word_embeddings.weight": {
                  "dtype": "F32", "shape": [vocab_size, width],
                  "data_offsets": [0, vocab_size * width * 4]}}
    return pack_safetensors(header, bytes(256))


def safetensors_parameters(path):
    """The listing's "safetensors" field (parameter counts per dtype), or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            (n,) = struct.unpack("<Q", head)
            if n > 1 << 24:
                return None
            header = json.loads(f.read(n))
    except (ValueError, struct.error, UnicodeDecodeError):
        return None
    counts = collections.Counter()
    for name, info in header.items():
        if name != "__metadata__":
            counts[info["dtype"]] += int(np.prod(info["shape"]))
    return {"parameters": dict(sorted(counts.items())), "total": sum(counts.values())}


# ---------------------------------------------------------------------------------------------
# The repositories
# ---------------------------------------------------------------------------------------------

def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256, size):
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def fake_commit(repo_id):
    return hashlib.sha1(f"{repo_id}@hub-fixtures/1".encode()).hexdigest()


LFS_SUFFIXES = (".safetensors", ".bin")


def describe_files(out_dir, folder, listing_override=None, truncate=False):
    """The listing of a folder's files (sorted as the hub lists them); listing_override:
    {rfilename: {"sha256": ..., "size": ...}} for what the listing claims of an LFS file."""
    listing_override = listing_override or {}
    files = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            data = f.read()
        served_sha = sha256_bytes(data)
        entry = {"rfilename": name, "path": os.path.relpath(path, out_dir).replace(os.sep, "/"),
                 "servedSize": len(data), "servedSha256": served_sha}
        if name.endswith(LFS_SUFFIXES):
            claim = listing_override.get(name, {})
            sha = claim.get("sha256", served_sha)
            size = claim.get("size", len(data))
            pointer = lfs_pointer(sha, size)
            entry.update(size=size, blobId=git_blob_id(pointer),
                         lfs={"sha256": sha, "size": size, "pointerSize": len(pointer)})
            if truncate:
                entry["truncateAt"] = len(data) // 2
        else:
            entry.update(size=len(data), blobId=git_blob_id(data), lfs=None)
        files.append(entry)
    return files


def repo_entry(out_dir, repo_id, info, expect, note, gated=False, truncate=False,
               listing_override=None):
    folder = os.path.join(out_dir, *repo_id.split("/"))
    files = describe_files(out_dir, folder, listing_override, truncate)
    weights = [f for f in files if f["rfilename"] == "model.safetensors"]
    if weights and "safetensors" not in info:
        params = safetensors_parameters(os.path.join(out_dir, weights[0]["path"]))
        if params:
            info = dict(info, safetensors=params)
    return {"id": repo_id, "dir": repo_id, "sha": fake_commit(repo_id), "gated": gated,
            "truncate": truncate, "info": info, "files": files, "expect": expect, "note": note}


def bert_info(config, weights, pipeline="fill-mask"):
    libs = {"safetensors": ["safetensors"], "bin": ["pytorch"],
            "both": ["pytorch", "safetensors"]}[weights]
    return {"pipeline_tag": pipeline, "library_name": "transformers",
            "tags": ["transformers", *libs, "bert", pipeline, "license:apache-2.0",
                     "autotrain_compatible", "endpoints_compatible", "region:us"],
            "config": {"architectures": config["architectures"], "model_type": "bert"}}


def refuse(message, stage, *alternatives):
    return {"load": False, "message": message, "messageAny": [message, *alternatives],
            "stage": stage}


def build(out_dir):
    import torch
    torch.manual_seed(0)
    vocab = read_vocab()
    root = os.path.join(out_dir, OWNER)
    repos = []
    timings = {}

    def folder_of(name):
        return os.path.join(root, name)

    def good(name, model, weights, note, config, dtype="F32", same_as=None):
        repo_id = f"{OWNER}/{name}"
        pipeline = "fill-mask" if model.has_mlm_head else "feature-extraction"
        expect = {"load": True,
                  "weights": "model.safetensors" if weights in ("safetensors", "both")
                  else "pytorch_model.bin",
                  "attn": f"{repo_id}.attn", "dtype": dtype,
                  "doLowerCase": model.tokenizer.do_lower_case,
                  "layers": model.config.num_hidden_layers, "hidden": model.config.hidden_size,
                  "heads": model.config.num_attention_heads}
        if same_as:
            expect["sameWeightsAs"] = same_as
        repos.append(repo_entry(out_dir, repo_id, bert_info(config, weights, pipeline), expect,
                                note))

    t0 = time.perf_counter()
    # --- good repositories -------------------------------------------------------------------
    mini = random_model(f"{OWNER}/bert-mini-st", SHAPE_A, 1, vocab, False, True)
    cfg = write_bert_folder(folder_of("bert-mini-st"), mini.name, mini, "safetensors",
                            ["BertForMaskedLM"])
    good("bert-mini-st", mini, "safetensors",
         "BertForMaskedLM names, shape A (2 layers, hidden 64, 2 heads), model.safetensors f32",
         config=cfg)

    # The same weights as a torch zip pickle, with the old position_ids buffer first.
    folder = folder_of("bert-mini-bin")
    cfg = write_bert_folder(folder, f"{OWNER}/bert-mini-bin", mini, "bin", ["BertForMaskedLM"])
    bin_path = os.path.join(folder, "pytorch_model.bin")
    state = torch.load(bin_path, map_location="cpu", weights_only=True)
    assert state[convert_model.TIED_DECODER_WEIGHT] is state["bert." + convert_model.WORD_EMBEDDINGS]
    with_ids = collections.OrderedDict(
        [("bert.embeddings.position_ids",
          torch.arange(SHAPE_A["max_position_embeddings"], dtype=torch.int64)[None, :])])
    with_ids.update(state)
    torch_save_deterministic(with_ids, bin_path)
    good("bert-mini-bin", mini, "bin",
         "the same weights as bert-mini-st as pytorch_model.bin (torch.save to a path: records "
         "under 'pytorch_model/'), decoder weight tied to the word embeddings (one storage), "
         "plus an int64 bert.embeddings.position_ids buffer (1 x 512)",
         same_as=f"{OWNER}/bert-mini-st", config=cfg)

    # The same weights in torch.save's legacy format (before PyTorch 1.6), which many 2020
    # uploads (bert-mini's among them) still have as their only weights file.
    folder = folder_of("bert-mini-legacy")
    cfg = write_bert_folder(folder, f"{OWNER}/bert-mini-legacy", mini, "bin", ["BertForMaskedLM"])
    bin_path = os.path.join(folder, "pytorch_model.bin")
    state = torch.load(bin_path, map_location="cpu", weights_only=True)
    torch.save(state, bin_path, _use_new_zipfile_serialization=False)
    good("bert-mini-legacy", mini, "bin",
         "the same weights as bert-mini-st as pytorch_model.bin in torch.save's legacy format "
         "(_use_new_zipfile_serialization=False), decoder tied to the word embeddings",
         same_as=f"{OWNER}/bert-mini-st", config=cfg)

    small = random_model(f"{OWNER}/bert-small-st", SHAPE_B, 2, vocab, True, True)
    folder = folder_of("bert-small-st")
    cfg = write_bert_folder(folder, small.name, small, "safetensors", ["BertForPreTraining"])
    state = convert_model.hf_state_dict(small)
    rng = np.random.default_rng(20)
    state["cls.seq_relationship.weight"] = rng.normal(0, 0.02, (2, 128)).astype(np.float32)
    state["cls.seq_relationship.bias"] = rng.normal(0, 0.02, (2,)).astype(np.float32)
    safetensors_io.save(os.path.join(folder, "model.safetensors"), state, metadata={"format": "pt"})
    good("bert-small-st", small, "safetensors",
         "BertForPreTraining names (pooler, masked-LM head and the NSP head "
         "cls.seq_relationship.*, which converters drop), shape B (4 layers, hidden 128, 4 heads, "
         "intermediate 256), model.safetensors", config=cfg)

    nohead = random_model(f"{OWNER}/bert-nohead", SHAPE_A, 3, vocab, True, False)
    cfg = write_bert_folder(folder_of("bert-nohead"), nohead.name, nohead, "bin", ["BertModel"])
    good("bert-nohead", nohead, "bin",
         "BertModel names (no 'bert.' prefix, no cls.*, with the pooler), shape A, "
         "pytorch_model.bin", config=cfg)

    cased = random_model(f"{OWNER}/bert-cased", SHAPE_A, 4, vocab, False, True,
                         modelfile.TokenizerSettings(do_lower_case=False))
    cfg = write_bert_folder(folder_of("bert-cased"), cased.name, cased, "safetensors",
                            ["BertForMaskedLM"])
    good("bert-cased", cased, "safetensors",
         "tokenizer_config.json has do_lower_case false (the page must not lower-case the text)",
         config=cfg)

    f16 = random_model(f"{OWNER}/bert-f16", SHAPE_A, 5, vocab, False, True)
    folder = folder_of("bert-f16")
    write_bert_folder(folder, f16.name, f16, "safetensors", ["BertForMaskedLM"])
    cfg = fix_config(folder, ["BertForMaskedLM"], "float16")
    state16 = {k: v.astype(np.float16) for k, v in convert_model.hf_state_dict(f16).items()}
    safetensors_io.save(os.path.join(folder, "model.safetensors"), state16,
                        metadata={"format": "pt"})
    good("bert-f16", f16, "safetensors",
         "shape A weights stored as F16 in model.safetensors; the page reads them as float32, "
         "as the converter does", dtype="F16", config=cfg)

    folder = folder_of("bert-f16-bin")
    write_bert_folder(folder, f"{OWNER}/bert-f16-bin", f16, "bin", ["BertForMaskedLM"])
    cfg = fix_config(folder, ["BertForMaskedLM"], "float16")
    halves = collections.OrderedDict((k, torch.from_numpy(v.copy())) for k, v in state16.items())
    halves[convert_model.TIED_DECODER_WEIGHT] = halves["bert." + convert_model.WORD_EMBEDDINGS]
    halves[convert_model.TIED_DECODER_BIAS] = halves[convert_model.MLM_BIAS]
    torch_save_deterministic(halves, os.path.join(folder, "pytorch_model.bin"))
    good("bert-f16-bin", f16, "bin",
         "the weights of bert-f16 as torch float16 tensors (HalfStorage) in pytorch_model.bin, "
         "decoder tied", dtype="F16", same_as=f"{OWNER}/bert-f16", config=cfg)

    both = random_model(f"{OWNER}/bert-both", SHAPE_A, 6, vocab, False, True)
    folder = folder_of("bert-both")
    write_bert_folder(folder, both.name, both, "bin", ["BertForMaskedLM"])
    os.rename(os.path.join(folder, "pytorch_model.bin"), os.path.join(folder, "bin.tmp"))
    cfg = write_bert_folder(folder, both.name, both, "safetensors", ["BertForMaskedLM"])
    os.rename(os.path.join(folder, "bin.tmp"), os.path.join(folder, "pytorch_model.bin"))
    good("bert-both", both, "both",
         "model.safetensors and pytorch_model.bin with identical weights: the page must fetch "
         "model.safetensors only (see the mock hub's request log)", config=cfg)
    timings["good"] = time.perf_counter() - t0

    # --- refused repositories ----------------------------------------------------------------
    t0 = time.perf_counter()
    base = random_model(f"{OWNER}/base", SHAPE_A, 50, vocab, False, True)
    base_cfg = None

    def bert_like(name, weights="safetensors"):
        nonlocal base_cfg
        folder = folder_of(name)
        base_cfg = write_bert_folder(folder, f"{OWNER}/{name}", base, weights,
                                     ["BertForMaskedLM"])
        return folder

    def refused(name, expect, note, weights="safetensors", **kw):
        repos.append(repo_entry(out_dir, f"{OWNER}/{name}", bert_info(base_cfg, weights),
                                expect, note, **kw))

    # not-bert: a GPT-2.
    folder = folder_of("not-bert")
    write_common(folder, f"{OWNER}/not-bert")
    gpt2 = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
            "bos_token_id": 63, "eos_token_id": 63, "model_type": "gpt2", "n_ctx": 32,
            "n_embd": 16, "n_head": 2, "n_layer": 2, "n_positions": 32, "torch_dtype": "float32",
            "transformers_version": TRANSFORMERS_VERSION, "vocab_size": 64}
    write_json(os.path.join(folder, "config.json"), gpt2)
    rng = np.random.default_rng(60)
    safetensors_io.save(os.path.join(folder, "model.safetensors"),
                        {"wte.weight": rng.normal(0, 0.02, (64, 16)).astype(np.float32),
                         "wpe.weight": rng.normal(0, 0.02, (32, 16)).astype(np.float32)},
                        metadata={"format": "pt"})
    repos.append(repo_entry(
        out_dir, f"{OWNER}/not-bert",
        {"pipeline_tag": "text-generation", "library_name": "transformers",
         "tags": ["transformers", "safetensors", "gpt2", "text-generation", "region:us"],
         "config": {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"}},
        refuse("gpt2", "config"), "config.json model_type gpt2 (and a tiny model.safetensors)"))

    # too-large: bert-large's config (336M values, over the wasm engine's 192M budget) over a
    # small weights file: refused by its config, before the weights are downloaded.
    folder = bert_like("too-large")
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        large = json.load(f)
    large.update({"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                  "intermediate_size": 4096, "max_position_embeddings": 512})
    write_json(os.path.join(folder, "config.json"), large)
    refused("too-large", refuse("more than this build loads", "config", "too large", "budget"),
            "bert-large's config over a small weights file: over the wasm engine's memory budget")

    bert_like("gated")
    refused("gated", refuse("gated", "auth", "401", "log in", "restricted"),
            "a good shape-A checkpoint in a gated repository: the model info is served "
            "(gated 'manual'), every file answers 401", gated=True)

    folder = bert_like("html-instead")
    st_path = os.path.join(folder, "model.safetensors")
    with open(st_path, "rb") as f:
        real = f.read()
    with open(st_path, "wb") as f:
        f.write(HTML_PAGE)
    refused("html-instead", refuse("HTML", "download", "html"),
            "the CDN serves an HTML page as model.safetensors; the listing's lfs.sha256 is the "
            "real file's, its size the HTML's (so only the content and the hash give it away)",
            listing_override={"model.safetensors": {"sha256": sha256_bytes(real),
                                                    "size": len(HTML_PAGE)}})

    bert_like("wrong-sha")
    refused("wrong-sha", refuse("SHA-256", "download", "sha256", "sha-256", "integrity"),
            "a good model.safetensors; the listing's lfs.sha256 is of other bytes",
            listing_override={"model.safetensors": {"sha256": sha256_bytes(b"other bytes")}})

    bert_like("truncated")
    refused("truncated",
            refuse("incomplete", "download", "truncated", "ended", "interrupted", "network",
                   "failed", "short", "SHA-256", "bytes"),
            "a good model.safetensors; the CDN sends the full Content-Length but closes the "
            "connection after half the bytes (files[].truncateAt)", truncate=True)

    hostile = [
        ("evil-os-system", "os-system", refuse("system", "pickle", "os.system", "os system"),
         "data.pkl's first item is GLOBAL os.system REDUCE('curl -s CANARY?from=evil-os-system')"),
        ("evil-eval", "eval", refuse("eval", "pickle"),
         "data.pkl's first item is GLOBAL builtins.eval REDUCE(\"__import__('os').system(...)\")"),
        ("evil-popen", "popen", refuse("Popen", "pickle", "subprocess"),
         "data.pkl's first item is GLOBAL subprocess.Popen REDUCE(['curl', '-s', CANARY])"),
        ("evil-reduce", "reduce", refuse("FloatStorage", "pickle", "REDUCE", "reduce"),
         "one tensor's storage is REDUCE on torch.FloatStorage (2^36 floats) instead of a "
         "persistent id: the global is one state dicts name, the call is not"),
        ("evil-getattr", "getattr", refuse("getattr", "pickle", "__import__", "builtins"),
         "data.pkl's first item is getattr(__import__('os'), 'system')(...) (GLOBAL "
         "builtins.getattr, builtins.__import__)"),
        ("evil-persid", "persid", refuse("..", "pickle", "etc/passwd"),
         "the word embeddings' persistent id names storage key '../../../etc/passwd'"),
        ("evil-dotdot", "dotdot", refuse("..", "zip", "evil"),
         "a valid checkpoint plus a zip entry 'archive/../evil'"),
        ("short-storage", "short-storage", refuse("shorter", "pickle", "short", "4096", "fewer"),
         "layer 0's query weight (64 x 64) has a storage of 4 floats (16 bytes in archive/data/N, "
         "numel 4 in the persistent id)"),
    ]
    for name, kind, expect, note in hostile:
        folder = bert_like(name, "bin")
        write_hostile_bin(folder, base, kind, name)
        refused(name, expect, "pytorch_model.bin, a torch zip (records under 'archive/', "
                "ZIP_STORED): " + note, weights="bin")

    folder = bert_like("st-overlap")
    path = os.path.join(folder, "model.safetensors")
    with open(path, "rb") as f:
        clean = f.read()
    with open(path, "wb") as f:
        f.write(overlapping_safetensors(clean))
    refused("st-overlap", refuse("overlap", "safetensors"),
            "model.safetensors whose bert.embeddings.LayerNorm.bias begins 128 bytes inside "
            "bert.embeddings.LayerNorm.weight (no hole: the data is 128 bytes shorter)")

    folder = bert_like("st-huge")
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(huge_safetensors(base.config.vocab_size))
    refused("st-huge",
            refuse("outside", "safetensors", "past the end", "beyond", "larger", "exceeds",
                   "too large", "GB", "truncated", "bytes"),
            "model.safetensors of a few hundred bytes whose header declares "
            "bert.embeddings.word_embeddings.weight F32 [30522, 24576] (3,000,434,688 bytes)")
    timings["refused"] = time.perf_counter() - t0

    # --- checks and model files --------------------------------------------------------------
    t0 = time.perf_counter()
    check_clean_pickle_writer(os.path.join(out_dir, "clean-check.tmp"), base)
    for name, kind, _, _ in hostile:
        if kind in ("dotdot", "persid", "short-storage", "reduce"):
            # Not torch's concern (dotdot, persid, short-storage), or not safe to try: torch
            # 1.13's weights_only unpickler allows REDUCE on storage classes and would allocate
            # the 2^36 floats evil-reduce asks for.
            continue
        path = os.path.join(root, name, "pytorch_model.bin")
        try:
            torch.load(path, map_location="cpu", weights_only=True)
        except Exception:  # noqa: BLE001 - the refusal is what is checked
            continue
        raise AssertionError(f"torch.load(weights_only=True) accepted {path}")
    timings["checks"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    for repo in repos:
        if repo["expect"]["load"]:
            attn = os.path.join(out_dir, repo["expect"]["attn"])
            # The converter's command line, run in this process (python3 -m
            # scripts.model.convert_model to-attn FOLDER FILE.attn --name ID).
            with contextlib.redirect_stdout(io.StringIO()):
                rc = convert_model.main(["to-attn", os.path.join(out_dir, repo["dir"]), attn,
                                         "--name", repo["id"]])
            assert not rc, f"convert_model to-attn failed for {repo['id']}"
    # The same weights give the same model file tensors.
    read = {r["id"]: modelfile.read(os.path.join(out_dir, r["expect"]["attn"]))
            for r in repos if r["expect"]["load"]}
    for repo in repos:
        same = repo["expect"].get("sameWeightsAs")
        if same:
            a, b = read[repo["id"]], read[same]
            assert list(a.tensors) == list(b.tensors)
            for k in a.tensors:
                assert np.array_equal(a.tensors[k], b.tensors[k]), (repo["id"], k)
    timings["convert"] = time.perf_counter() - t0
    return repos, timings


def up_to_date(out_dir, path):
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return False
    if manifest.get("version") != VERSION:
        return False
    for repo in manifest.get("repos", ()):
        for entry in repo["files"]:
            p = os.path.join(out_dir, entry["path"])
            if not os.path.isfile(p) or os.path.getsize(p) != entry["servedSize"]:
                return False
        attn = repo["expect"].get("attn")
        if attn and not os.path.isfile(os.path.join(out_dir, attn)):
            return False
    return True


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out_dir = os.path.abspath(argv[0])
    os.makedirs(out_dir, exist_ok=True)
    manifest_path = os.path.join(out_dir, "repos.json")
    with open(os.path.join(out_dir, ".make_checkpoints.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if up_to_date(out_dir, manifest_path):
            print(f"{manifest_path}: up to date ({VERSION})")
            return 0
        start = time.perf_counter()
        if os.path.exists(manifest_path):
            os.remove(manifest_path)
        shutil.rmtree(os.path.join(out_dir, OWNER), ignore_errors=True)
        repos, timings = build(out_dir)
        manifest = {"version": VERSION, "generator": "tests/hub/make_checkpoints.py",
                    "canaryPort": CANARY_PORT, "canaryUrl": CANARY_URL, "repos": repos}
        tmp = manifest_path + ".tmp"
        write_json(tmp, manifest, sort_keys=False)
        os.replace(tmp, manifest_path)
        total = time.perf_counter() - start
        good = sum(r["expect"]["load"] for r in repos)
        print(f"wrote {manifest_path}: {len(repos)} repositories ({good} to load, "
              f"{len(repos) - good} to refuse) in {total:.1f} s ("
              + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
