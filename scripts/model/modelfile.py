"""Reader and writer of the `.attn` model file (format version 1, model_data/README.md).

The C++ engine reads the same format (wasm/core/model_file.*). Both derive the table of expected
tensors from the config, in the order the README lists, and refuse any file that differs.

    model = modelfile.read("model_data/x.attn")     # raises ModelFileError with a clear message
    modelfile.write("out.attn", model, plan=modelfile.parse_plan("*.weight=int8:row"))

Tensors are handed over and returned as float32 numpy arrays; the writer quantises them per the
precision plan and the reader dequantises them (value = integer x scale; for `rans` the
integers are entropy-coded, scripts/model/rans.py).
"""

import fnmatch
import json
import math
import struct
import sys
import zlib
from dataclasses import dataclass, field

import numpy as np

from scripts.model import rans

MAGIC = b"ATTNBERT"
FORMAT_VERSION = 1
HEADER_SIZE = 256
ENTRY_SIZE = 128
NAME_FIELD_SIZE = 64
DATA_ALIGN = 64

F32, F16, INT8, RANS = 0, 1, 2, 3
DTYPE_NAMES = {F32: "f32", F16: "f16", INT8: "int8", RANS: "rans"}
# rans: integers in [-levels, levels]; 16383 keeps the alphabet below rANS's 2^15 slots.
MAX_RANS_LEVELS = 16383
DEFAULT_RANS_LEVELS = 127
DTYPE_BY_NAME = {v: k for k, v in DTYPE_NAMES.items()}

# Header: magic, version, header size, 7 config u32s, eps, num_tensors, flags, 5 (offset, bytes)
# pairs for name/provenance/vocabulary/table/data, file size, CRC-32, reserved.
_HEADER = struct.Struct("<8s9IfII10QQI108x")
# Entry: name, dtype, ndim, shape[4], offset, bytes, group size, reserved.
_ENTRY = struct.Struct("<64sII4IQQI20x")
assert _HEADER.size == HEADER_SIZE and _ENTRY.size == ENTRY_SIZE
_CRC_OFFSET = 144
# u32: the tokenizer's settings (TokenizerSettings.word); the header's bytes 148..151 are the
# split layout's rows per shard (scripts/model/split_model.py), 156.. are reserved.
TOKENIZER_OFFSET = 152
RESERVED_FROM = 156

HOW_TO_FIX = ("re-create it with scripts/model/convert_model.py to-attn (or "
              "scripts/reference/make_random_model.py for test models)")


class ModelFileError(ValueError):
    """A file or model that does not follow the format; the message names the field and fix."""


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float

    def __post_init__(self):
        # The file stores eps as float32; holding that value keeps written and read configs equal.
        object.__setattr__(self, "layer_norm_eps", float(np.float32(self.layer_norm_eps)))

    @property
    def head_size(self):
        return self.hidden_size // self.num_attention_heads

    def validate(self):
        for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, key)
            if not isinstance(value, int) or not 0 < value < 2**31:
                raise ModelFileError(f"config {key} is {value!r}; expected a positive integer")
        if self.hidden_size % self.num_attention_heads:
            raise ModelFileError(
                f"config hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_attention_heads}")
        eps = float(np.float32(self.layer_norm_eps))
        if not (math.isfinite(eps) and eps > 0):
            raise ModelFileError(f"config layer_norm_eps is {self.layer_norm_eps!r}; expected a "
                                 f"positive finite float32 (BERT uses 1e-12)")


# The one table of tensor names (Hugging Face BertModel names), in file order.
EMBEDDING_TENSORS = (
    ("embeddings.word_embeddings.weight", ("V", "d")),
    ("embeddings.position_embeddings.weight", ("P", "d")),
    ("embeddings.token_type_embeddings.weight", ("T", "d")),
    ("embeddings.LayerNorm.weight", ("d",)),
    ("embeddings.LayerNorm.bias", ("d",)),
)
LAYER_TENSORS = (
    ("attention.self.query.weight", ("d", "d")),
    ("attention.self.query.bias", ("d",)),
    ("attention.self.key.weight", ("d", "d")),
    ("attention.self.key.bias", ("d",)),
    ("attention.self.value.weight", ("d", "d")),
    ("attention.self.value.bias", ("d",)),
    ("attention.output.dense.weight", ("d", "d")),
    ("attention.output.dense.bias", ("d",)),
    ("attention.output.LayerNorm.weight", ("d",)),
    ("attention.output.LayerNorm.bias", ("d",)),
    ("intermediate.dense.weight", ("f", "d")),
    ("intermediate.dense.bias", ("f",)),
    ("output.dense.weight", ("d", "f")),
    ("output.dense.bias", ("d",)),
    ("output.LayerNorm.weight", ("d",)),
    ("output.LayerNorm.bias", ("d",)),
)
POOLER_TENSORS = (
    ("pooler.dense.weight", ("d", "d")),
    ("pooler.dense.bias", ("d",)),
)
# The masked-LM head; its decoder weight is tied to the word embeddings and never stored.
MLM_HEAD_TENSORS = (
    ("cls.predictions.transform.dense.weight", ("d", "d")),
    ("cls.predictions.transform.dense.bias", ("d",)),
    ("cls.predictions.transform.LayerNorm.weight", ("d",)),
    ("cls.predictions.transform.LayerNorm.bias", ("d",)),
    ("cls.predictions.bias", ("V",)),
)


def layer_prefix(layer):
    return f"encoder.layer.{layer}."


def _dims(config):
    return {"V": config.vocab_size, "P": config.max_position_embeddings,
            "T": config.type_vocab_size, "d": config.hidden_size,
            "f": config.intermediate_size}


def expected_tensors(config, with_pooler=False, with_mlm_head=False):
    """[(name, shape)] in file order: required tensors, then the optional groups present."""
    dims = _dims(config)
    spec = list(EMBEDDING_TENSORS)
    for layer in range(config.num_hidden_layers):
        spec += [(layer_prefix(layer) + name, shape) for name, shape in LAYER_TENSORS]
    if with_pooler:
        spec += POOLER_TENSORS
    if with_mlm_head:
        spec += MLM_HEAD_TENSORS
    return [(name, tuple(dims[d] for d in shape)) for name, shape in spec]


def optional_groups_present(names):
    """(with_pooler, with_mlm_head) from a set of names; a partial group is an error."""
    names = set(names)
    present = []
    for label, group in (("pooler", POOLER_TENSORS), ("masked-LM head", MLM_HEAD_TENSORS)):
        have = [n for n, _ in group if n in names]
        if have and len(have) != len(group):
            missing = [n for n, _ in group if n not in names]
            raise ModelFileError(f"the {label} is incomplete: missing {', '.join(missing)}; "
                                 f"the format keeps all of its tensors or none")
        present.append(bool(have))
    return tuple(present)


@dataclass(frozen=True)
class TokenizerSettings:
    """Hugging Face BertTokenizer's settings that change what it makes of a text, as a
    checkpoint's tokenizer_config.json gives them; the defaults are bert-base-uncased's. In the
    file they are one u32 (the header's tokenizer field), zero for the defaults: bit 0 set for
    do_lower_case false, bits 1-2 strip_accents (0 null, 1 true, 2 false), bit 3 set for
    tokenize_chinese_chars false."""
    do_lower_case: bool = True
    strip_accents: object = None  # None, True or False
    tokenize_chinese_chars: bool = True

    def word(self):
        accents = {None: 0, True: 1, False: 2}[self.strip_accents]
        return (0 if self.do_lower_case else 1) | accents << 1 | (0 if self.tokenize_chinese_chars else 8)

    @classmethod
    def from_word(cls, word):
        accents = (word >> 1) & 3
        if word & ~0xF or accents == 3:
            raise ModelFileError(f"tokenizer settings {word:#x} (header bytes 152..155) are not a "
                                 f"combination this format knows (bits 0-3)")
        return cls(do_lower_case=not word & 1, strip_accents=(None, True, False)[accents],
                   tokenize_chinese_chars=not word & 8)

    @classmethod
    def from_config(cls, settings, source):
        """From a tokenizer_config.json's object; refuses values BertTokenizer would not take."""
        def flag(key, default, allow_none=False):
            value = settings.get(key, default)
            if value is None and allow_none:
                return None
            if not isinstance(value, bool):
                raise ModelFileError(f"{source}: {key} is {value!r}; expected true or false"
                                     + (" or null" if allow_none else ""))
            return value
        return cls(do_lower_case=flag("do_lower_case", True), strip_accents=flag("strip_accents", None, True),
                   tokenize_chinese_chars=flag("tokenize_chinese_chars", True))


@dataclass
class Model:
    """Everything a model file holds. tensors: name -> float32 array, in file order."""
    config: BertConfig
    name: str
    provenance: str  # a JSON object, kept as the exact text so round trips are bit-identical
    vocab: bytes     # vocab.txt content: one entry per line, "\n" after each
    tensors: dict
    # name -> (dtype name, group size), or ("rans", group size, levels); filled by the reader,
    # informative for the writer.
    precision: dict = field(default_factory=dict)
    tokenizer: TokenizerSettings = field(default_factory=TokenizerSettings)

    @property
    def has_pooler(self):
        return POOLER_TENSORS[0][0] in self.tensors

    @property
    def has_mlm_head(self):
        return MLM_HEAD_TENSORS[0][0] in self.tensors

    def vocab_entries(self):
        return self.vocab.decode("utf-8").split("\n")[:-1]


# ---------------------------------------------------------------------------------------------
# Precision plan
# ---------------------------------------------------------------------------------------------

def parse_plan(text):
    """A precision plan: entries `PATTERN=DTYPE[:GROUP[:LEVELS]]`, separated by commas or new
    lines (`#` starts a comment). PATTERN is a shell glob over tensor names, the first match wins
    and unmatched tensors are f32. DTYPE is f32, f16, int8 or rans. GROUP (int8 and rans) is
    `tensor`, `row` (the default) or a number of consecutive elements sharing one scale. LEVELS
    (rans only, default 127) sets the step: each group's largest magnitude / LEVELS, so rans:row:127
    holds the same values as int8:row, entropy-coded. Example: `*.weight=rans:row:511,*=f32`.
    Returns [(pattern, dtype, group or None, levels or None)].
    """
    plan = []
    for line in text.replace(",", "\n").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        pattern, sep, rule = line.partition("=")
        if not sep or not pattern.strip():
            raise ModelFileError(f"precision plan entry {line!r}: expected "
                                 f"PATTERN=DTYPE[:GROUP[:LEVELS]]")
        dtype, _, rest = rule.strip().partition(":")
        group, _, levels = rest.partition(":")
        if dtype not in DTYPE_BY_NAME:
            raise ModelFileError(f"precision plan entry {line!r}: dtype {dtype!r} is not one of "
                                 f"{', '.join(DTYPE_BY_NAME)}")
        if dtype in ("int8", "rans"):
            group = group or "row"
            if group not in ("tensor", "row") and not (group.isdigit() and int(group) > 0):
                raise ModelFileError(f"precision plan entry {line!r}: group {group!r} must be "
                                     f"'tensor', 'row' or a positive number")
            group = group if group in ("tensor", "row") else int(group)
        elif group:
            raise ModelFileError(f"precision plan entry {line!r}: only int8 and rans take a "
                                 f"group size")
        if dtype == "rans":
            levels = levels or str(DEFAULT_RANS_LEVELS)
            if not (levels.isdigit() and 1 <= int(levels) <= MAX_RANS_LEVELS):
                raise ModelFileError(f"precision plan entry {line!r}: levels {levels!r} must be "
                                     f"a number from 1 to {MAX_RANS_LEVELS}")
            levels = int(levels)
        elif levels:
            raise ModelFileError(f"precision plan entry {line!r}: only rans takes levels")
        plan.append((pattern.strip(), dtype, group or None, levels or None))
    return plan


def rule_text(entry):
    """The plan rule ('f16', 'int8:256', 'rans:256:511') of one precision map entry."""
    return ":".join(str(part) for part in entry if part != 0)


def plan_from_precision(precision):
    """A plan that reproduces a per-tensor precision map {name: (dtype name, group size[,
    levels])}."""
    return parse_plan("\n".join(f"{name}={rule_text(entry)}" for name, entry in precision.items()))


def format_precision(precision):
    """A short summary such as 'f32' or 'f32+int8' of a precision map."""
    kinds = sorted({entry[0] for entry in precision.values()})
    return "+".join(kinds) if kinds else "f32"


def _resolve(plan, name, shape):
    """(dtype code, group size, levels) the plan gives this tensor; group size 0 unless int8 or
    rans, levels 0 unless rans."""
    for pattern, dtype, group, levels in plan or ():
        if fnmatch.fnmatchcase(name, pattern):
            break
    else:
        return F32, 0, 0
    if dtype not in ("int8", "rans"):
        return DTYPE_BY_NAME[dtype], 0, 0
    numel = int(np.prod(shape))
    row = shape[-1]
    size = numel if group == "tensor" else row if group == "row" else int(group)
    if numel % size or (len(shape) == 2 and row % size and size % row):
        raise ModelFileError(
            f"{name} {list(shape)}: {dtype} group size {size} must divide the element count "
            f"{numel} and divide the row length {row} or be a multiple of it")
    return DTYPE_BY_NAME[dtype], size, levels or 0


# ---------------------------------------------------------------------------------------------
# Encoding and decoding of tensor bytes
# ---------------------------------------------------------------------------------------------

def _round_scale(scale, levels=127):
    """Rounds float32 scales to 24 - bits(levels) significant bits (17 for int8). Then
    integer x scale is exact in float32, so dequantising and quantising again gives back the same
    scales and values: the model file -> Hugging Face -> model file round trip stays
    bit-identical for int8 and rans too."""
    clear = int(levels).bit_length()
    bits = np.asarray(scale, dtype=np.float32).view(np.uint32)
    half, mask = np.uint32(1 << (clear - 1)), np.uint32((0xFFFFFFFF << clear) & 0xFFFFFFFF)
    return ((bits + half) & mask).view(np.float32)


def quantize(values, group, levels):
    """Symmetric integers in [-levels, levels] per group of `group` consecutive elements, step =
    the group's largest magnitude / levels: (int64 values, float32 scales)."""
    flat = np.asarray(values, dtype=np.float32).reshape(-1, group).astype(np.float64)
    max_abs = np.abs(flat).max(axis=1)
    scales = _round_scale((max_abs / levels).astype(np.float32), levels)
    # Above 2047 levels the rounded scale keeps 11 or fewer significant bits, and rounding it down
    # would clip each group's largest values (its most important weights) by up to 4 steps at
    # 8191 levels. Such scales go one unit up instead. (At 2047 levels and below the nearest
    # scale never clips by more than rounding does, so those files are unchanged.)
    unit = np.uint32(1 << int(levels).bit_length())
    clipped = np.rint(max_abs / np.where(scales > 0, scales.astype(np.float64), 1.0)) > levels
    if clipped.any():
        bumped = (scales.view(np.uint32) + unit).view(np.float32)
        scales = np.where(clipped, bumped, scales).astype(np.float32)
    safe = np.where(scales > 0, scales.astype(np.float64), 1.0)
    q = np.clip(np.rint(flat / safe[:, None]), -levels, levels).astype(np.int64)
    return q.reshape(-1), scales


def quantize_int8(values, group):
    """Symmetric int8 per group of `group` consecutive elements: (int8 values, float32 scales)."""
    q, scales = quantize(values, group, 127)
    return q.astype(np.int8), scales


def dequantize_int8(q, scales, group):
    return (q.astype(np.float32).reshape(-1, group) * scales[:, None]).reshape(-1)


def _padded_int8_length(numel):
    return numel + (-numel % 4)


def _encoded_size(dtype, numel, group):
    """Bytes of a tensor in this dtype; for rans only known after coding (None)."""
    if dtype == RANS:
        return None
    if dtype == F32:
        return 4 * numel
    if dtype == F16:
        return 2 * numel
    return _padded_int8_length(numel) + 4 * (numel // group)


def _encode_rans(values, group, levels):
    """The rans layout of model_data/README.md: levels, lanes, frequencies, scales, states,
    stream lengths, streams."""
    q, scales = quantize(values, group, levels)
    symbols = q + levels
    freq = rans.frequencies(symbols, 2 * levels + 1)
    states, streams = rans.encode(symbols, freq)
    levels_word, table = rans.encode_table(freq, levels)
    return b"".join([struct.pack("<II", levels_word, len(streams)), table,
                     scales.astype("<f4").tobytes(), states.astype("<u4").tobytes(),
                     np.array([len(x) for x in streams], dtype="<u4").tobytes()] + streams)


def _decode_rans(raw, numel, group):
    """Values of a rans tensor, or ModelFileError naming the inconsistency."""
    def take(count, dtype, what):
        nonlocal at
        size = count * np.dtype(dtype).itemsize
        if at + size > len(raw):
            raise ModelFileError(f"rans data ends inside its {what} ({len(raw)} bytes)")
        values = np.frombuffer(raw, dtype=dtype, count=count, offset=at)
        at += size
        return values

    at = 0
    levels_word, lanes = (int(v) for v in take(2, "<u4", "header"))
    try:
        levels, freq, at = rans.decode_table(raw, at, levels_word, MAX_RANS_LEVELS)
    except rans.RansError as e:
        raise ModelFileError(f"rans {e}") from None
    if lanes != -(-numel // rans.LANE_LENGTH):
        raise ModelFileError(f"rans lane count {lanes}, expected {-(-numel // rans.LANE_LENGTH)} "
                             f"for {numel} values in lanes of {rans.LANE_LENGTH}")
    scales = take(numel // group, "<f4", "scales").astype(np.float32)
    states = take(lanes, "<u4", "lane states")
    lengths = take(lanes, "<u4", "stream lengths").astype(np.int64)
    if at + int(lengths.sum()) != len(raw):
        raise ModelFileError(f"rans streams take {int(lengths.sum())} bytes after offset {at}, "
                             f"but the tensor has {len(raw)} bytes")
    if int(freq.astype(np.int64).sum()) != rans.PROB_SCALE:
        raise ModelFileError(f"rans frequencies sum to {int(freq.astype(np.int64).sum())}, "
                             f"expected {rans.PROB_SCALE}")
    if not np.all(np.isfinite(scales)):
        raise ModelFileError("a rans scale is not finite")
    ends = at + np.cumsum(lengths)
    streams = [raw[end - length:end] for end, length in zip(ends, lengths)]
    try:
        symbols = rans.decode(states, streams, freq, numel)
    except rans.RansError as e:
        raise ModelFileError(f"rans streams are damaged: {e}") from None
    q = symbols - levels
    return (q.astype(np.float32).reshape(-1, group) * scales[:, None]).reshape(-1)


def _encode(name, values, dtype, group, levels=0):
    if dtype == RANS:
        return _encode_rans(values, group, levels)
    if dtype == F32:
        return values.astype("<f4").tobytes()
    if dtype == F16:
        if np.abs(values).max(initial=0) > np.finfo(np.float16).max:
            raise ModelFileError(f"{name}: values up to {np.abs(values).max():g} overflow f16 "
                                 f"(max 65504); keep this tensor f32 or int8 in the plan")
        return values.astype("<f2").tobytes()
    q, scales = quantize_int8(values, group)
    pad = _padded_int8_length(q.size) - q.size
    return q.tobytes() + b"\0" * pad + scales.astype("<f4").tobytes()


def _decode(raw, dtype, numel, group):
    if dtype == RANS:
        return _decode_rans(raw, numel, group)
    if dtype == F32:
        return np.frombuffer(raw, dtype="<f4", count=numel).astype(np.float32)
    if dtype == F16:
        return np.frombuffer(raw, dtype="<f2", count=numel).astype(np.float32)
    q = np.frombuffer(raw, dtype=np.int8, count=numel)
    scales = np.frombuffer(raw, dtype="<f4", offset=_padded_int8_length(numel),
                           count=numel // group).astype(np.float32)
    if not np.all(np.isfinite(scales)):
        raise ModelFileError("an int8 scale is not finite")
    return dequantize_int8(q, scales, group)


# ---------------------------------------------------------------------------------------------
# Writer
# ---------------------------------------------------------------------------------------------

def _align(offset, alignment):
    return offset + (-offset % alignment)


def check_model(model):
    """Raises ModelFileError unless the model's parts agree with its config."""
    config = model.config
    config.validate()
    if not model.name:
        raise ModelFileError("the model name is empty; give it a display name")
    try:
        provenance = json.loads(model.provenance)
    except json.JSONDecodeError as e:
        raise ModelFileError(f"provenance is not JSON ({e})") from None
    if not isinstance(provenance, dict):
        raise ModelFileError("provenance must be a JSON object")
    if not model.vocab.endswith(b"\n"):
        raise ModelFileError("the vocabulary must end with a new line after its last entry")
    try:
        entries = model.vocab.decode("utf-8").split("\n")[:-1]
    except UnicodeDecodeError as e:
        raise ModelFileError(f"the vocabulary is not UTF-8 ({e})") from None
    if len(entries) != config.vocab_size:
        raise ModelFileError(f"the vocabulary has {len(entries)} entries; config vocab_size is "
                             f"{config.vocab_size}")
    with_pooler, with_mlm_head = optional_groups_present(model.tensors)
    expected = expected_tensors(config, with_pooler, with_mlm_head)
    expected_names = [n for n, _ in expected]
    unknown = [n for n in model.tensors if n not in expected_names]
    if unknown:
        raise ModelFileError(f"unexpected tensor(s) {', '.join(unknown)}; a BERT model file has "
                             f"only the tensors listed in model_data/README.md")
    for name, shape in expected:
        if name not in model.tensors:
            raise ModelFileError(f"missing tensor {name} (expected shape {list(shape)})")
        array = model.tensors[name]
        if tuple(array.shape) != shape:
            raise ModelFileError(f"{name}: shape {list(array.shape)}, expected {list(shape)} "
                                 f"from the config")
        if not np.all(np.isfinite(array)):
            raise ModelFileError(f"{name}: holds a non-finite value (NaN or infinity)")
    return expected


def serialize(model, plan=None):
    """The model as .attn bytes. plan: a parsed precision plan (default: everything f32)."""
    expected = check_model(model)
    config = model.config
    name_bytes = model.name.encode("utf-8")
    provenance_bytes = model.provenance.encode("utf-8")

    entries = []
    blobs = []
    offset = 0
    for name, shape in expected:
        values = np.asarray(model.tensors[name], dtype=np.float32).reshape(-1)
        dtype, group, levels = _resolve(plan, name, shape)
        blob = _encode(name, values, dtype, group, levels)
        assert dtype == RANS or len(blob) == _encoded_size(dtype, values.size, group)
        offset = _align(offset, DATA_ALIGN)
        padded_shape = list(shape) + [0] * (4 - len(shape))
        entries.append(_ENTRY.pack(name.encode("utf-8"), dtype, len(shape), *padded_shape,
                                   offset, len(blob), group))
        blobs.append((offset, blob))
        offset += len(blob)
    data_bytes = offset

    # Sections in the order the README fixes: name, provenance, vocabulary, table, data.
    name_offset = HEADER_SIZE
    provenance_offset = name_offset + len(name_bytes)
    vocab_offset = provenance_offset + len(provenance_bytes)
    table_offset = _align(vocab_offset + len(model.vocab), 8)
    table_bytes = ENTRY_SIZE * len(entries)
    data_offset = _align(table_offset + table_bytes, DATA_ALIGN)
    file_size = data_offset + data_bytes

    out = bytearray(file_size)
    out[name_offset:provenance_offset] = name_bytes
    out[provenance_offset:vocab_offset] = provenance_bytes
    out[vocab_offset:vocab_offset + len(model.vocab)] = model.vocab
    out[table_offset:table_offset + table_bytes] = b"".join(entries)
    for tensor_offset, blob in blobs:
        start = data_offset + tensor_offset
        out[start:start + len(blob)] = blob
    crc = zlib.crc32(memoryview(out)[HEADER_SIZE:]) & 0xFFFFFFFF
    out[:HEADER_SIZE] = _HEADER.pack(
        MAGIC, FORMAT_VERSION, HEADER_SIZE, config.vocab_size, config.hidden_size,
        config.num_hidden_layers, config.num_attention_heads, config.intermediate_size,
        config.max_position_embeddings, config.type_vocab_size, config.layer_norm_eps,
        len(entries), 0,
        name_offset, len(name_bytes), provenance_offset, len(provenance_bytes),
        vocab_offset, len(model.vocab), table_offset, table_bytes, data_offset, data_bytes,
        file_size, crc)
    struct.pack_into("<I", out, TOKENIZER_OFFSET, model.tokenizer.word())
    return bytes(out)


def write(path, model, plan=None):
    data = serialize(model, plan)
    with open(path, "wb") as f:
        f.write(data)
    return data


# ---------------------------------------------------------------------------------------------
# Reader
# ---------------------------------------------------------------------------------------------

def parse(buf, source="model file"):
    """A Model from .attn bytes; raises ModelFileError naming the problem and the fix."""
    buf = bytes(buf)
    size = len(buf)

    def fail(message):
        raise ModelFileError(f"{source}: {message}")

    if size < HEADER_SIZE:
        fail(f"{size} bytes, shorter than the {HEADER_SIZE}-byte header; the file is "
             f"truncated or not a model file")
    if buf[:8] != MAGIC:
        fail(f"bad magic {buf[:8]!r}, expected {MAGIC!r}; this is not a model file")
    (_, version, header_size, vocab_size, hidden, layers, heads, intermediate, positions,
     types, eps, num_tensors, flags, name_off, name_len, prov_off, prov_len, vocab_off,
     vocab_len, table_off, table_len, data_off, data_len, file_size, crc) = _HEADER.unpack_from(buf)
    if version != FORMAT_VERSION:
        fail(f"format version {version}, this reader knows version {FORMAT_VERSION}; "
             f"{HOW_TO_FIX}")
    if header_size != HEADER_SIZE:
        fail(f"header size {header_size}, expected {HEADER_SIZE}")
    if flags != 0:
        fail(f"flags {flags:#x}, expected 0")
    if any(buf[148:TOKENIZER_OFFSET]) or any(buf[RESERVED_FROM:HEADER_SIZE]):
        fail("reserved header bytes are not zero")
    try:
        tokenizer = TokenizerSettings.from_word(struct.unpack_from("<I", buf, TOKENIZER_OFFSET)[0])
    except ModelFileError as e:
        fail(str(e))
    if file_size != size:
        fail(f"the header says {file_size} bytes but the file has {size}; it is truncated or "
             f"padded; download or convert it again")
    actual_crc = zlib.crc32(memoryview(buf)[HEADER_SIZE:]) & 0xFFFFFFFF
    if actual_crc != crc:
        fail(f"checksum mismatch: CRC-32 {actual_crc:#010x}, header says {crc:#010x}; the file "
             f"is corrupt; download or convert it again")

    config = BertConfig(vocab_size, hidden, layers, heads, intermediate, positions, types,
                        float(np.float32(eps)))
    try:
        config.validate()
    except ModelFileError as e:
        fail(str(e))

    sections = [("name", name_off, name_len), ("provenance", prov_off, prov_len),
                ("vocabulary", vocab_off, vocab_len), ("tensor table", table_off, table_len),
                ("tensor data", data_off, data_len)]
    previous_end, previous = HEADER_SIZE, "header"
    for label, off, length in sections:
        if off < previous_end:
            fail(f"the {label} section (offset {off}) overlaps the {previous} (ends at "
                 f"{previous_end}); sections follow the header in the README's order")
        if off + length > size:
            fail(f"the {label} section [{off}, {off + length}) runs past the end of the file "
                 f"({size} bytes)")
        previous_end, previous = off + length, label
    if table_len != num_tensors * ENTRY_SIZE:
        fail(f"tensor table is {table_len} bytes, expected {num_tensors} x {ENTRY_SIZE}")
    if data_off % DATA_ALIGN:
        fail(f"tensor data offset {data_off} is not a multiple of {DATA_ALIGN}")

    try:
        name = buf[name_off:name_off + name_len].decode("utf-8")
    except UnicodeDecodeError:
        fail("the model name is not UTF-8")
    try:
        provenance = buf[prov_off:prov_off + prov_len].decode("utf-8")
        if not isinstance(json.loads(provenance), dict):
            fail("provenance is not a JSON object")
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        fail(f"provenance is not UTF-8 JSON ({e})")
    vocab = buf[vocab_off:vocab_off + vocab_len]
    if not vocab.endswith(b"\n"):
        fail("the vocabulary does not end with a new line")
    try:
        entry_count = len(vocab.decode("utf-8").split("\n")) - 1
    except UnicodeDecodeError:
        fail("the vocabulary is not UTF-8")
    if entry_count != vocab_size:
        fail(f"the vocabulary has {entry_count} entries, config vocab_size is {vocab_size}")

    table = []
    for i in range(num_tensors):
        fields = _ENTRY.unpack_from(buf, table_off + i * ENTRY_SIZE)
        raw_name, dtype, ndim, s0, s1, s2, s3, offset, nbytes, group = fields
        tensor_name = raw_name.rstrip(b"\0")
        if b"\0" in tensor_name:
            fail(f"tensor table entry {i}: name is not NUL-padded")
        try:
            tensor_name = tensor_name.decode("utf-8")
        except UnicodeDecodeError:
            fail(f"tensor table entry {i}: name is not UTF-8")
        entry_start = table_off + i * ENTRY_SIZE
        if any(buf[entry_start + 108:entry_start + ENTRY_SIZE]):
            fail(f"{tensor_name}: reserved bytes of its table entry are not zero")
        if dtype not in DTYPE_NAMES:
            fail(f"{tensor_name}: unknown dtype {dtype} (known: 0 = f32, 1 = f16, 2 = int8, "
                 f"3 = rans)")
        if ndim not in (1, 2):
            fail(f"{tensor_name}: ndim {ndim}, expected 1 or 2")
        shape = (s0, s1, s2, s3)
        if any(shape[ndim:]):
            fail(f"{tensor_name}: unused shape dimensions are not 0")
        table.append((tensor_name, dtype, tuple(shape[:ndim]), offset, nbytes, group))

    names = [t[0] for t in table]
    unknown_optional = set(names) - {n for n, _ in expected_tensors(config, True, True)}
    if unknown_optional:
        fail(f"unexpected tensor {sorted(unknown_optional)[0]}; {HOW_TO_FIX}")
    try:
        with_pooler, with_mlm_head = optional_groups_present(names)
    except ModelFileError as e:
        fail(str(e))
    expected = expected_tensors(config, with_pooler, with_mlm_head)
    for i, (exp_name, exp_shape) in enumerate(expected):
        if i >= len(table):
            fail(f"missing tensor {exp_name}; the table has {len(table)} entries, the config "
                 f"needs {len(expected)}; {HOW_TO_FIX}")
        if table[i][0] != exp_name:
            fail(f"tensor table entry {i} is {table[i][0]}, expected {exp_name}; {HOW_TO_FIX}")
        if table[i][2] != exp_shape:
            fail(f"{exp_name}: shape {list(table[i][2])}, expected {list(exp_shape)} from the "
                 f"config; {HOW_TO_FIX}")
    if len(table) != len(expected):
        fail(f"the table has {len(table)} tensors, expected {len(expected)}")

    tensors = {}
    precision = {}
    spans = []
    for tensor_name, dtype, shape, offset, nbytes, group in table:
        numel = int(np.prod(shape))
        if dtype in (INT8, RANS):
            row = shape[-1]
            if group == 0 or numel % group or (len(shape) == 2 and row % group and group % row):
                fail(f"{tensor_name}: {DTYPE_NAMES[dtype]} group size {group} must divide the "
                     f"element count {numel} and divide the row length {row} or be a multiple "
                     f"of it")
        elif group != 0:
            fail(f"{tensor_name}: group size {group} set on a {DTYPE_NAMES[dtype]} tensor")
        want = _encoded_size(dtype, numel, group)
        if want is not None and nbytes != want:
            fail(f"{tensor_name}: {nbytes} bytes, expected {want} for {DTYPE_NAMES[dtype]} "
                 f"{list(shape)}")
        if offset % DATA_ALIGN:
            fail(f"{tensor_name}: data offset {offset} is not a multiple of {DATA_ALIGN}")
        if offset + nbytes > data_len:
            fail(f"{tensor_name}: bytes [{offset}, {offset + nbytes}) run past the "
                 f"{data_len}-byte data section")
        spans.append((offset, offset + nbytes, tensor_name))
        raw = buf[data_off + offset:data_off + offset + nbytes]
        try:
            values = _decode(raw, dtype, numel, group)
        except ModelFileError as e:
            fail(f"{tensor_name}: {e}")
        if not np.all(np.isfinite(values)):
            fail(f"{tensor_name}: holds a non-finite value (NaN or infinity); {HOW_TO_FIX}")
        tensors[tensor_name] = values.reshape(shape)
        precision[tensor_name] = (DTYPE_NAMES[dtype], group)
        if dtype == RANS:
            precision[tensor_name] += (int(struct.unpack_from("<I", raw)[0]) & ~rans.CODED_TABLE_FLAG,)
    spans.sort()
    for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
        if start < end:
            fail(f"tensors {a} and {b} overlap in the data section")

    return Model(config, name, provenance, vocab, tensors, precision, tokenizer)


def read(path):
    with open(path, "rb") as f:
        return parse(f.read(), source=str(path))


def main(argv):
    """`python3 -m scripts.model.modelfile FILE`: validates a model file and prints its config and
    tensor table."""
    if len(argv) != 2:
        print("usage: python3 -m scripts.model.modelfile FILE.attn", file=sys.stderr)
        return 2
    try:
        model = read(argv[1])
    except (OSError, ModelFileError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"name: {model.name}")
    print(f"config: {json.dumps(model.config.__dict__)}")
    for name, values in model.tensors.items():
        print(f"{name:52s} {rule_text(model.precision[name]):16s} {list(values.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
