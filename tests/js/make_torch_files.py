"""Writes the checkpoint files that tests/js/tensor_files*.test.mjs read, with the real tools.

    /usr/bin/python3 tests/js/make_torch_files.py OUT_DIR CANARY_PORT      (cwd: the repository)

OUT_DIR/good/: files written by torch.save (several pickle protocols; the zip format and the legacy
format of _use_new_zipfile_serialization=False, *_legacy*.bin), by the repository's safetensors
writer (scripts/model/safetensors_io.py) and a BF16 safetensors file written by hand, plus
torch-like files built with a pickler that mimics torch.save's (crafted*.bin; crafted_legacy.bin is
checked here to load with torch.load).
OUT_DIR/hostile/: files a reader must refuse; the pickles with a payload are made by Python's
pickle from objects whose __reduce__ names os.system, builtins.eval or subprocess.Popen (pickling
only records the global; nothing is run here), their command fetching
http://127.0.0.1:CANARY_PORT/canary.
OUT_DIR/manifest.json: for every good file each tensor's dtype, shape, bytes (hex) and float32
bit patterns, its tied pairs and metadata; for every hostile file the words its refusal must
contain; the entries (base64) of the small torch archives and the parts (five pickles, storage
data, offsets of the element counts) of the legacy files, for the fuzz test to re-pack.
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
import tarfile
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
manifest = {"good": {}, "hostile": [], "entries": {}, "legacy_parts": {}}


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

# --- good files in torch.save's legacy format (before PyTorch 1.6, and _use_new_zipfile_serialization=False)
LEGACY = {"_use_new_zipfile_serialization": False}
MAGIC = torch.serialization.MAGIC_NUMBER
BERT_TIED = [("bert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight"),
             ("cls.predictions.bias", "cls.predictions.decoder.bias")]


def legacy_split(data):
    """A legacy file's five pickles (each up to and including its STOP) and the storage data after them."""
    f = io.BytesIO(data)
    pickles = []
    for _ in range(5):
        start = f.tell()
        for _op in pickletools.genops(f):
            pass
        pickles.append(data[start:f.tell()])
    return pickles, data[f.tell():]


def record_legacy_parts(name, data, itemsize_of):
    """For the fuzz test: the parts of a legacy file and the offsets of its storages' element counts."""
    pickles, rest = legacy_split(data)
    keys = pickle.loads(pickles[4])
    pos, counts = sum(map(len, pickles)), []
    for key in keys:
        counts.append(pos)
        (n,) = struct.unpack_from("<q", data, pos)
        pos += 8 + n * itemsize_of(key)
    assert pos == len(data), (name, pos, len(data))
    manifest["legacy_parts"][name] = {"pickles": [base64.b64encode(p).decode() for p in pickles],
                                      "data": base64.b64encode(rest).decode(), "counts": counts}


def save_legacy(name, sd, tied=(), metadata=None, **kwargs):
    save_torch(name, sd, tied, metadata, **LEGACY, **kwargs)
    with open(os.path.join(OUT, "good", name), "rb") as f:
        data = f.read()
    assert data.startswith(b"\x80") and not data.startswith(b"PK"), name
    # torch keys a legacy storage by its address (str(storage._cdata)); the tensors are alive here.
    sizes = {str(t.storage()._storage._cdata): t.element_size() for t in sd.values()}
    record_legacy_parts(name, data, lambda key: sizes[key])
    loaded = torch.load(os.path.join(OUT, "good", name))
    assert list(loaded) == list(sd) and all(raw_bytes(loaded[k]) == raw_bytes(v) for k, v in sd.items()), name


save_legacy("small_legacy.bin", small, tied=[("embeddings.word_embeddings.weight", "decoder.weight")])
save_legacy("small_legacy_p4.bin", small, tied=[("embeddings.word_embeddings.weight", "decoder.weight")], pickle_protocol=4)
save_legacy("bert_like_legacy.bin", bert, tied=BERT_TIED, metadata={"_metadata": {k: v for k, v in bert._metadata.items()}})
save_legacy("bert_like_f16_legacy.bin", bert_half, tied=BERT_TIED)
params_legacy = collections.OrderedDict(torch.nn.Linear(3, 2).named_parameters())  # _rebuild_parameter
save_legacy("parameters_legacy.bin", params_legacy)


def py2_strings(pkl):
    """The pickle with every short ASCII str as SHORT_BINSTRING, as Python 2's pickle wrote str."""
    ops, out = list(pickletools.genops(pkl)), b""
    for i, (op, arg, pos) in enumerate(ops):
        end = ops[i + 1][2] if i + 1 < len(ops) else len(pkl)
        if op.name == "BINUNICODE" and arg.isascii() and len(arg) < 256:
            out += b"U" + bytes([len(arg)]) + arg.encode()
        else:
            out += pkl[pos:end]
    return out


# A legacy file as Python 2 wrote one (torch 0.4 to 1.4 ran on it): its strings are BINSTRINGs.
with open(os.path.join(OUT, "good", "small_legacy.bin"), "rb") as f:
    py2_pickles, py2_data = legacy_split(f.read())
py2_file = b"".join(map(py2_strings, py2_pickles)) + py2_data
assert b"X\x07\x00\x00\x00storage" not in py2_file and b"U\x07storage" in py2_file
with open(os.path.join(OUT, "good", "small_legacy_py2_strings.bin"), "wb") as f:
    f.write(py2_file)
good("small_legacy_py2_strings.bin", "pytorch", small, tied=[("embeddings.word_embeddings.weight", "decoder.weight")])
py2_loaded = torch.load(os.path.join(OUT, "good", "small_legacy_py2_strings.bin"))
assert list(py2_loaded) == list(small) and all(raw_bytes(py2_loaded[k]) == raw_bytes(t) for k, t in small.items())

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



class LegacyLikePickler(pickle.Pickler):
    """Pickles like _legacy_save's state_dict pickle: ('storage', type, key, location, numel, view_metadata)."""

    def persistent_id(self, obj):
        if isinstance(obj, FakeStorage):
            return ("storage", obj.storage_type, obj.key, "cpu", obj.numel, obj.extra)
        return None


SYS_INFO = {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}


def legacy_bytes(obj, storages, keys=None, magic=MAGIC, version=1001, sys_info=SYS_INFO, counts=None, protocol=2,
                 parts=None):
    """A file in torch.save's legacy format, as _legacy_save writes it: storages is {key: raw bytes}
    and counts {key: the element count written} (default: the bytes / 4). parts: {index: bytes} replaces
    whole pickles (0 to 4)."""
    keys = sorted(storages) if keys is None else keys
    buf = io.BytesIO()
    LegacyLikePickler(buf, protocol=protocol).dump(obj)
    pickles = [pickle.dumps(magic, protocol=protocol), pickle.dumps(version, protocol=protocol),
               pickle.dumps(sys_info, protocol=protocol), buf.getvalue(), pickle.dumps(keys, protocol=protocol)]
    for index, data in (parts or {}).items():
        pickles[index] = data
    out = b"".join(pickles)
    for key in keys:
        raw = storages.get(key, b"")
        out += struct.pack("<q", (counts or {}).get(key, len(raw) // 4)) + raw
    return out


crafted_legacy = legacy_bytes(crafted, {"0": raw_bytes(values)})
with open(os.path.join(OUT, "good", "crafted_legacy.bin"), "wb") as f:
    f.write(crafted_legacy)
good("crafted_legacy.bin", "pytorch", {"a": values[:6].reshape(2, 3), "tail": values[4:6], "one": values[5]})
assert torch.equal(torch.load(os.path.join(OUT, "good", "crafted_legacy.bin"))["tail"], values[4:6])
record_legacy_parts("crafted_legacy.bin", crafted_legacy, lambda key: 4)

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

# --- hostile files in torch.save's legacy format ---------------------------------------------------
# A payload in the state_dict, written by torch.save itself (pickling only records the global).
evil_sd = collections.OrderedDict(bias=torch.ones(3), weight=Payload(os.system, (f"curl -s {CANARY}",)))
evil_buf = io.BytesIO()
torch.save(evil_sd, evil_buf, _use_new_zipfile_serialization=False)
evil_legacy = evil_buf.getvalue()
assert b"cposix\nsystem\n" in legacy_split(evil_legacy)[0][3]  # GLOBAL 'posix system', in the state_dict's pickle
hostile("legacy_evil_os_system.bin", "pytorch", ["was refused", "the global posix.system,", "nothing in the file was run"], data=evil_legacy)
evil_popen = legacy_bytes({"w": Payload(subprocess.Popen, (["curl", "-s", CANARY],))}, {}, protocol=4)
hostile("legacy_evil_popen_p4.bin", "pytorch", ["was refused", "the global subprocess.Popen,", "nothing in the file was run"], data=evil_popen)
# ... and in the small pickles around it: the sys_info and the storage key list.
evil_pickle = pickle.dumps(Payload(os.system, (f"curl -s {CANARY}",)), protocol=2)
hostile("legacy_evil_sys_info.bin", "pytorch", ["was refused", "posix.system", "nothing in the file was run"],
        data=legacy_bytes(crafted, {"0": v}, parts={2: evil_pickle}))
hostile("legacy_evil_key_list.bin", "pytorch", ["was refused", "posix.system", "nothing in the file was run"],
        data=legacy_bytes(crafted, {"0": v}, parts={4: evil_pickle}))


class PidPickler(pickle.Pickler):
    def persistent_id(self, obj):
        return ("storage", "0", "cpu", 6) if obj is store0 else None


pid_buf = io.BytesIO()
PidPickler(pid_buf, protocol=2).dump(["0", store0])
hostile("legacy_persid_key_list.bin", "pytorch", ["was refused", "storage-key-list pickle", "persistent id"],
        data=legacy_bytes(crafted, {"0": v}, parts={4: pid_buf.getvalue()}))

small_legacy = open(os.path.join(OUT, "good", "small_legacy.bin"), "rb").read()
small_pickles, small_data = legacy_split(small_legacy)
small_keys = pickle.loads(small_pickles[4])
first_count = sum(map(len, small_pickles))


def with_pickle(index, data):
    return b"".join(small_pickles[:index] + [data] + small_pickles[index + 1:]) + small_data


hostile("legacy_bad_magic.bin", "pytorch", ["magic number", hex(MAGIC ^ 1), hex(MAGIC)],
        data=with_pickle(0, pickle.dumps(MAGIC ^ 1, protocol=2)))
hostile("legacy_protocol.bin", "pytorch", ["protocol version is 1,000", "1001"], data=with_pickle(1, pickle.dumps(1000, protocol=2)))
hostile("legacy_big_endian.bin", "pytorch", ["sys_info", "big-endian", "little_endian is False"],
        data=with_pickle(2, pickle.dumps(dict(SYS_INFO, little_endian=False), protocol=2)))
hostile("legacy_sys_info_int.bin", "pytorch", ["sys_info", "C int is 8 bytes"],
        data=with_pickle(2, pickle.dumps(dict(SYS_INFO, type_sizes={"short": 2, "int": 8, "long": 8}), protocol=2)))
hostile("legacy_sys_info_missing.bin", "pytorch", ["sys_info has no little_endian"],
        data=with_pickle(2, pickle.dumps({"protocol_version": 1001, "type_sizes": SYS_INFO["type_sizes"]}, protocol=2)))
hostile("legacy_key_extra.bin", "pytorch", ["storage key list names storage 123456789", "which its state_dict does not use"],
        data=with_pickle(4, pickle.dumps(small_keys + ["123456789"], protocol=2)))
hostile("legacy_key_missing.bin", "pytorch", [f"uses storage {small_keys[-1]}", "key list lacks"],
        data=with_pickle(4, pickle.dumps(small_keys[:-1], protocol=2)))
hostile("legacy_key_twice.bin", "pytorch", [f"names storage {small_keys[0]} twice"],
        data=with_pickle(4, pickle.dumps(small_keys + small_keys[:1], protocol=2)))
hostile("legacy_key_list_dict.bin", "pytorch", ["storage key list is a dict, not a list"],
        data=with_pickle(4, pickle.dumps({}, protocol=2)))
huge_count = bytearray(small_legacy)
struct.pack_into("<q", huge_count, first_count, 2**40)
hostile("legacy_count_huge.bin", "pytorch", [f"element count of storage {small_keys[0]}", "1,099,511,627,776", "bytes are left in the file"],
        data=bytes(huge_count))
negative_count = bytearray(small_legacy)
struct.pack_into("<q", negative_count, first_count, -1)
hostile("legacy_count_negative.bin", "pytorch", [f"element count of storage {small_keys[0]}", "negative"], data=bytes(negative_count))
(n0,) = struct.unpack_from("<q", small_legacy, first_count)
fewer = bytearray(small_legacy)
struct.pack_into("<q", fewer, first_count, n0 - 1)
hostile("legacy_count_mismatch.bin", "pytorch", [f"element count of storage {small_keys[0]} is {n0 - 1:,}", f"holds {n0:,} values"],
        data=bytes(fewer))
hostile("legacy_truncated.bin", "pytorch", ["truncated"], data=small_legacy[:-5])
hostile("legacy_truncated_pickle.bin", "pytorch", ["state_dict pickle", "truncated"], data=small_legacy[:first_count // 2])
hostile("legacy_trailing.bin", "pytorch", ["4 bytes after its last storage"], data=small_legacy + b"\0\0\0\0")
# Hand-made state_dict pickles: a storage view, a storage used as two types, a tensor past its storage.
hostile("legacy_view_metadata.bin", "pytorch", ["storage 0", "view_metadata", "before 0.4"],
        data=legacy_bytes({"a": FakeTensor(FakeStorage("0", torch.FloatStorage, 6, ("1", 2, 4)), 0, (4,), (1,))}, {"0": v}))
hostile("legacy_two_types.bin", "pytorch", ["storage 0", "two different storages"],
        data=legacy_bytes({"a": FakeTensor(store0, 0, (6,), (1,)), "b": FakeTensor(FakeStorage("0", torch.HalfStorage, 6), 0, (6,), (1,))}, {"0": v}))
hostile("legacy_short_storage.bin", "pytorch", ["offset 3 of storage 0,", "the storage is shorter than the tensor claims"],
        data=legacy_bytes({"a": FakeTensor(store0, 3, (2, 2), (2, 1))}, {"0": v}))
hostile("legacy_untyped.bin", "pytorch", ["storage type", "torch.storage.UntypedStorage"],
        data=legacy_bytes({"a": FakeTensor(FakeStorage("0", torch.storage.UntypedStorage, 24), 0, (24,), (1,))}, {"0": v}))
hostile("legacy_pid_traversal.bin", "pytorch", ["../../etc/passwd", "not a plain storage name"],
        data=legacy_bytes({"a": FakeTensor(FakeStorage("../../etc/passwd", torch.FloatStorage, 6), 0, (6,), (1,))}, {"../../etc/passwd": v}))
# Other old or foreign pickles: torch.save's oldest tar format, and a pickle without the magic number.
tar_buf = io.BytesIO()
with tarfile.open(fileobj=tar_buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
    info = tarfile.TarInfo("pickle")
    info.size = len(evil_pickle)
    tar.addfile(info, io.BytesIO(evil_pickle))
hostile("legacy_tar.bin", "pytorch", ["tar archive", "oldest format"], data=tar_buf.getvalue())
hostile("pickle_no_magic.bin", "pytorch", ["Python pickle", "does not start with torch.save's magic number"],
        data=pickle.dumps({"w": 1}, protocol=2))

# Every float16 and bfloat16 bit pattern widened to float32 by numpy and torch (exact conversions).
every = np.arange(65536, dtype=np.uint32).astype(np.uint16)
manifest["f16_to_f32_bits"] = every.view(np.float16).astype(np.float32).view(np.uint32).tolist()
manifest["bf16_to_f32_bits"] = [b & 0xFFFFFFFF for b in torch.from_numpy(every.view(np.int16)).view(torch.bfloat16).float().view(torch.int32).tolist()]

with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump(manifest, f)
print(f"wrote {len(manifest['good'])} good and {len(manifest['hostile'])} hostile files to {OUT}")
