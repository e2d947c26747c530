"""Splits a model file into a core file and word-embedding shard files, and joins them back
(the split layout of model_data/README.md, "Split layout for the page").

    python3 -m scripts.model.split_model split MODEL.attn OUT_DIR [--rows-per-shard R]
        writes OUT_DIR/<stem>.core.attn, OUT_DIR/<stem>.rows/00000.bin, 00001.bin, ... and
        OUT_DIR/<stem>.rows.bin, every shard back to back (for a reader who needs every row)
    python3 -m scripts.model.split_model join CORE.attn SHARD_DIR OUT.attn
        rebuilds the single file, byte for byte

The core is the single file with the header's flag bit 0 set, rows_per_shard R at offset 148, and
the word-embedding tensor cut down to its rANS header (levels, lanes, frequency table). Shard k
holds rows [k R, min((k + 1) R, V)): a 64-byte header, then its rows' scales, lane states, lane
stream lengths and lane streams, copied verbatim from the single file. Everything works on the
file's bytes; no value is decoded or re-encoded, so the rows the engine decodes from the shards
are bit-identical to the single file's.

`split_bytes` and `join_bytes` are the same operations on bytes, for the study
(scripts/model/shard_study.py) and the tests.
"""

import argparse
import os
import re
import statistics
import struct
import sys
import zlib

from scripts.model import modelfile, rans

WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
DEFAULT_ROWS_PER_SHARD = 32

FLAGS_OFFSET = 52
ROWS_PER_SHARD_OFFSET = 148
FLAG_SHARDED_WORD_EMBEDDINGS = 1

SHARD_MAGIC = b"ATTNROWS"
SHARD_VERSION = 1
SHARD_HEADER_SIZE = 64
# magic, version, header bytes, core CRC, index, first row, row count, payload bytes, payload CRC,
# reserved.
_SHARD_HEADER = struct.Struct("<8sIIIIIIQI20x")
assert _SHARD_HEADER.size == SHARD_HEADER_SIZE

_HEADER = modelfile._HEADER
_ENTRY = modelfile._ENTRY
_CRC_OFFSET = modelfile._CRC_OFFSET


class SplitError(ValueError):
    """A file that cannot be split or joined; the message names the file, the field and the fix."""


def shard_name(index):
    """The file name of shard `index` inside the <stem>.rows folder."""
    return f"{index:05d}.bin"


def output_names(model_path, out_dir):
    """(core path, shard folder) that `split` writes for this model file."""
    stem = os.path.basename(model_path)
    if stem.endswith(".attn"):
        stem = stem[:-len(".attn")]
    return os.path.join(out_dir, stem + ".core.attn"), os.path.join(out_dir, stem + ".rows")


def all_rows_name(rows_dir):
    """The file of every shard back to back, in index order, next to the shard folder: one
    download for a reader who needs the whole table (the masked-LM head scores every entry)."""
    return rows_dir + ".bin"


def _align(value, alignment):
    return value + (-value % alignment)


def lane_rows(hidden):
    """The smallest number of rows whose values fill whole rANS lanes: R must be a multiple."""
    step = 1
    while step * hidden % rans.LANE_LENGTH:
        step += 1
    return step


# ---------------------------------------------------------------------------------------------
# Parsing the parts both directions need
# ---------------------------------------------------------------------------------------------

class _File:
    """The header fields and tensor table of a model file (single or core), checked enough that
    the byte surgery below is safe. Values are not decoded."""

    def __init__(self, buf, source, want_core):
        self.buf = buf
        self.source = source
        if len(buf) < modelfile.HEADER_SIZE or buf[:8] != modelfile.MAGIC:
            self.fail(f"not a model file (no {modelfile.MAGIC.decode()} header)")
        fields = _HEADER.unpack_from(buf)
        (_, version, header_size, self.vocab_size, self.hidden, *_rest) = fields[:10]
        self.num_tensors, self.flags = fields[11], fields[12]
        (self.table_off, self.table_len, self.data_off, self.data_len,
         self.file_size, self.crc) = fields[19:25]
        if version != modelfile.FORMAT_VERSION or header_size != modelfile.HEADER_SIZE:
            self.fail(f"format version {version} / header size {header_size}; this tool knows "
                      f"version {modelfile.FORMAT_VERSION} with a {modelfile.HEADER_SIZE}-byte "
                      f"header")
        if self.file_size != len(buf):
            self.fail(f"the header says {self.file_size} bytes but the file has {len(buf)}; it "
                      f"is truncated or padded")
        actual = zlib.crc32(memoryview(buf)[modelfile.HEADER_SIZE:]) & 0xFFFFFFFF
        if actual != self.crc:
            self.fail(f"checksum mismatch: CRC-32 {actual:#010x}, header says {self.crc:#010x}; "
                      f"the file is corrupt")
        self.rows_per_shard = struct.unpack_from("<I", buf, ROWS_PER_SHARD_OFFSET)[0]
        if want_core:
            if self.flags != FLAG_SHARDED_WORD_EMBEDDINGS:
                self.fail(f"flags {self.flags:#x}: not a core file (flag bit 0, word-embedding "
                          f"rows in shard files, is not set); it is already a single file"
                          if self.flags == 0 else f"flags {self.flags:#x}, expected 0x1")
            if self.rows_per_shard == 0:
                self.fail("a core file with rows_per_shard 0 (header offset 148)")
            reserved_from = modelfile.RESERVED_FROM
        else:
            if self.flags == FLAG_SHARDED_WORD_EMBEDDINGS:
                self.fail("this is a core file (flag bit 0 set: its word-embedding rows are in "
                          "shard files); split takes a single model file; `join` rebuilds one")
            if self.flags != 0:
                self.fail(f"flags {self.flags:#x}, expected 0")
            reserved_from = modelfile.RESERVED_FROM
            if any(buf[ROWS_PER_SHARD_OFFSET:modelfile.TOKENIZER_OFFSET]):
                self.fail("reserved header bytes are not zero")
        # Bytes 152..155, the tokenizer's settings, travel with the header (_header_with).
        if any(buf[reserved_from:modelfile.HEADER_SIZE]):
            self.fail("reserved header bytes are not zero")
        if (self.table_len != self.num_tensors * modelfile.ENTRY_SIZE
                or self.table_off + self.table_len > self.data_off
                or self.data_off + self.data_len != self.file_size
                or self.data_off % modelfile.DATA_ALIGN):
            self.fail("the tensor table or data section is not where the header says; check "
                      "the file with `python3 -m scripts.model.modelfile FILE`")
        self.entries = []
        for i in range(self.num_tensors):
            at = self.table_off + i * modelfile.ENTRY_SIZE
            raw_name, dtype, ndim, s0, s1, s2, s3, offset, nbytes, group = _ENTRY.unpack_from(
                buf, at)
            name = raw_name.rstrip(b"\0").decode("utf-8", "replace")
            if offset % modelfile.DATA_ALIGN or offset + nbytes > self.data_len:
                self.fail(f"{name}: bytes [{offset}, {offset + nbytes}) are not an aligned span "
                          f"of the {self.data_len}-byte data section")
            self.entries.append({"at": at, "name": name, "dtype": dtype,
                                 "shape": (s0, s1, s2, s3)[:ndim], "offset": offset,
                                 "bytes": nbytes, "group": group})
        if not self.entries or self.entries[0]["name"] != WORD_EMBEDDINGS:
            self.fail(f"the first tensor is not {WORD_EMBEDDINGS}")
        self.words = self.entries[0]
        if self.words["shape"] != (self.vocab_size, self.hidden):
            self.fail(f"{WORD_EMBEDDINGS} has shape {list(self.words['shape'])}, expected "
                      f"[{self.vocab_size}, {self.hidden}]")
        words_start = self.words["offset"]
        for e in self.entries[1:]:
            if e["offset"] < words_start + self.words["bytes"]:
                self.fail(f"{e['name']} lies before or inside {WORD_EMBEDDINGS} in the data "
                          f"section; the split layout needs the word embeddings first")

    def fail(self, message):
        raise SplitError(f"{self.source}: {message}")

    def data(self, start, end=None):
        base = self.data_off
        return self.buf[base + start:base + (self.data_len if end is None else end)]


def _check_words(f, rows_per_shard):
    """(levels, lanes, header bytes, group) of the word-embedding tensor, or SplitError."""
    words = f.words
    if words["dtype"] != modelfile.RANS:
        kind = modelfile.DTYPE_NAMES.get(words["dtype"], f"dtype {words['dtype']}")
        f.fail(f"{WORD_EMBEDDINGS} is {kind}; the split layout needs dtype rans, so that shard "
               f"boundaries fall on lane boundaries. Requantize first, e.g. `python3 -m "
               f"scripts.model.convert_model requantize IN.attn OUT.attn --precision "
               f"'{WORD_EMBEDDINGS}=rans:row:16383,...'`")
    hidden, vocab, group = f.hidden, f.vocab_size, words["group"]
    step = lane_rows(hidden)
    if rows_per_shard <= 0 or rows_per_shard * hidden % rans.LANE_LENGTH:
        f.fail(f"rows per shard {rows_per_shard}: R x hidden ({rows_per_shard} x {hidden}) must "
               f"be a positive multiple of {rans.LANE_LENGTH}, the rANS lane length, so that "
               f"shards start on lane boundaries; for hidden {hidden}, R is a multiple of {step}")
    if group <= 0 or rows_per_shard * hidden % group:
        f.fail(f"{WORD_EMBEDDINGS} has group size {group}, which does not divide R x hidden = "
               f"{rows_per_shard * hidden}: a shard must hold whole scale groups. Use a "
               f"per-row plan (rans:row) or an R that is a multiple of the group's rows")
    if words["bytes"] < 8:
        f.fail(f"{WORD_EMBEDDINGS}: rans data of {words['bytes']} bytes ends inside its header")
    raw = f.data(words["offset"], words["offset"] + words["bytes"])
    levels_word, lanes = struct.unpack_from("<II", raw)
    try:
        # The header: levels, lanes and the frequency table, plain or coded (rans.py).
        levels, _, head_bytes = rans.decode_table(raw, 8, levels_word, modelfile.MAX_RANS_LEVELS)
    except rans.RansError as e:
        f.fail(f"{WORD_EMBEDDINGS}: rans {e}")
    numel = vocab * hidden
    if lanes != -(-numel // rans.LANE_LENGTH):
        f.fail(f"{WORD_EMBEDDINGS}: rans lane count {lanes}, expected "
               f"{-(-numel // rans.LANE_LENGTH)}")
    return levels, lanes, head_bytes, group


def _shard_rows(vocab, rows_per_shard):
    """[(index, first row, row count)] of every shard."""
    return [(k, first, min(rows_per_shard, vocab - first))
            for k, first in enumerate(range(0, vocab, rows_per_shard))]


def _header_with(buf, flags, rows_per_shard, data_len, file_size, entries, new_offsets):
    """A copy of `buf`'s header and table (bytes [0, data offset)) with these fields replaced."""
    head = bytearray(buf[:struct.unpack_from("<Q", buf, 120)[0]])
    struct.pack_into("<I", head, FLAGS_OFFSET, flags)
    struct.pack_into("<I", head, ROWS_PER_SHARD_OFFSET, rows_per_shard)
    struct.pack_into("<Q", head, 128, data_len)
    struct.pack_into("<Q", head, 136, file_size)
    for e, (offset, nbytes) in zip(entries, new_offsets):
        struct.pack_into("<QQ", head, e["at"] + 88, offset, nbytes)
    return head


def _finish(head, data):
    out = head + data
    struct.pack_into("<I", out, _CRC_OFFSET,
                     zlib.crc32(memoryview(out)[modelfile.HEADER_SIZE:]) & 0xFFFFFFFF)
    return bytes(out)


def _shift(words_offset, single_words_bytes, core_words_bytes):
    """How far (a multiple of 64) the tensors after the word embeddings move between the single
    file and the core: both lay the next tensor at the first 64-byte boundary after it."""
    return (_align(words_offset + single_words_bytes, modelfile.DATA_ALIGN)
            - _align(words_offset + core_words_bytes, modelfile.DATA_ALIGN))


# ---------------------------------------------------------------------------------------------
# Split
# ---------------------------------------------------------------------------------------------

def split_bytes(buf, rows_per_shard=DEFAULT_ROWS_PER_SHARD, source="model file"):
    """(core bytes, [shard bytes]) of a single model file. Raises SplitError."""
    buf = bytes(buf)
    f = _File(buf, source, want_core=False)
    levels, lanes, head_bytes, group = _check_words(f, rows_per_shard)
    words, hidden, vocab = f.words, f.hidden, f.vocab_size
    numel = vocab * hidden
    start, size = words["offset"], words["bytes"]
    raw = f.data(start, start + size)

    # The rans tensor's parts (model_data/README.md): header | scales | states | lengths | streams.
    at_scales = head_bytes
    at_states = at_scales + 4 * (numel // group)
    at_lengths = at_states + 4 * lanes
    at_streams = at_lengths + 4 * lanes
    if at_streams > size:
        f.fail(f"{WORD_EMBEDDINGS}: rans data of {size} bytes ends inside its lane table")
    lengths = struct.unpack_from(f"<{lanes}I", raw, at_lengths)
    stream_starts = [at_streams]
    for length in lengths:
        stream_starts.append(stream_starts[-1] + length)
    if stream_starts[-1] != size:
        f.fail(f"{WORD_EMBEDDINGS}: rans streams take {stream_starts[-1] - at_streams} bytes "
               f"after offset {at_streams}, but the tensor has {size} bytes")

    # The single file's padding after the word embeddings, which the core drops, must be zero.
    end = start + size
    pad_end = min(_align(end, modelfile.DATA_ALIGN), f.data_len)
    if any(f.data(end, pad_end)):
        f.fail(f"the padding after {WORD_EMBEDDINGS} is not zero; rewrite the file with "
               f"`python3 -m scripts.model.convert_model requantize`")

    # Core: the word embeddings keep their rANS header only; the tensors after them move up.
    shift = _shift(start, size, head_bytes)
    new_offsets = [(start, head_bytes)] + [
        (e["offset"] - shift, e["bytes"]) for e in f.entries[1:]]
    core_data = bytearray(f.data(0, start + head_bytes))
    if f.data_len > end:
        core_data += bytes(_align(len(core_data), modelfile.DATA_ALIGN) - len(core_data))
        core_data += f.data(_align(end, modelfile.DATA_ALIGN))
    core_len = len(core_data)
    head = _header_with(buf, FLAG_SHARDED_WORD_EMBEDDINGS, rows_per_shard, core_len,
                        f.data_off + core_len, f.entries, new_offsets)
    core = _finish(head, core_data)
    core_crc = struct.unpack_from("<I", core, _CRC_OFFSET)[0]

    shards = []
    for index, first, count in _shard_rows(vocab, rows_per_shard):
        lane0 = first * hidden // rans.LANE_LENGTH
        shard_lanes = -(-count * hidden // rans.LANE_LENGTH)
        scale0, shard_scales = first * hidden // group, count * hidden // group
        payload = b"".join([
            raw[at_scales + 4 * scale0:at_scales + 4 * (scale0 + shard_scales)],
            raw[at_states + 4 * lane0:at_states + 4 * (lane0 + shard_lanes)],
            raw[at_lengths + 4 * lane0:at_lengths + 4 * (lane0 + shard_lanes)],
            raw[stream_starts[lane0]:stream_starts[lane0 + shard_lanes]],
        ])
        shards.append(_SHARD_HEADER.pack(SHARD_MAGIC, SHARD_VERSION, SHARD_HEADER_SIZE, core_crc,
                                         index, first, count, len(payload),
                                         zlib.crc32(payload) & 0xFFFFFFFF) + payload)

    if join_bytes(core, shards) != buf:  # the layout promise; cheap next to reading the file
        f.fail("split and join do not give back the file byte for byte; its layout is not one "
               "this tool can split (rewrite it with convert_model requantize)")
    return core, shards


# ---------------------------------------------------------------------------------------------
# Join
# ---------------------------------------------------------------------------------------------

def parse_shard(shard, core_crc, index, first, count, hidden, group, source="shard"):
    """(scales, states, lengths, streams) bytes of one shard, after checking its header and
    checksum against what the core expects. Raises SplitError naming the field."""
    def fail(message):
        raise SplitError(f"{source}: {message}")

    if len(shard) < SHARD_HEADER_SIZE or shard[:8] != SHARD_MAGIC:
        fail(f"not a shard file (no {SHARD_MAGIC.decode()} header)")
    (_, version, header_size, crc_of_core, got_index, got_first, got_count, payload_bytes,
     payload_crc) = _SHARD_HEADER.unpack_from(shard)
    if version != SHARD_VERSION or header_size != SHARD_HEADER_SIZE:
        fail(f"shard version {version} / header size {header_size}, expected {SHARD_VERSION} / "
             f"{SHARD_HEADER_SIZE}")
    if any(shard[44:SHARD_HEADER_SIZE]):
        fail("reserved shard header bytes are not zero")
    if crc_of_core != core_crc:
        fail(f"belongs to another model: it names core CRC {crc_of_core:#010x}, this core's is "
             f"{core_crc:#010x}")
    if (got_index, got_first, got_count) != (index, first, count):
        fail(f"holds shard {got_index} (rows {got_first}, {got_count} of them), expected shard "
             f"{index} (rows {first}, {count} of them)")
    if payload_bytes != len(shard) - SHARD_HEADER_SIZE:
        fail(f"header says {payload_bytes} payload bytes, the file has "
             f"{len(shard) - SHARD_HEADER_SIZE}; it is truncated or padded")
    payload = shard[SHARD_HEADER_SIZE:]
    actual = zlib.crc32(payload) & 0xFFFFFFFF
    if actual != payload_crc:
        fail(f"checksum mismatch: payload CRC-32 {actual:#010x}, header says "
             f"{payload_crc:#010x}; the shard is corrupt")
    scales = 4 * (count * hidden // group)
    lanes = -(-count * hidden // rans.LANE_LENGTH)
    if scales + 8 * lanes > len(payload):
        fail(f"payload of {len(payload)} bytes ends inside its scales or lane table")
    lengths = struct.unpack_from(f"<{lanes}I", payload, scales + 4 * lanes)
    streams = payload[scales + 8 * lanes:]
    if sum(lengths) != len(streams):
        fail(f"lane streams take {sum(lengths)} bytes, the payload has {len(streams)} after its "
             f"lane table")
    return (payload[:scales], payload[scales:scales + 4 * lanes],
            payload[scales + 4 * lanes:scales + 8 * lanes], streams)


def join_bytes(core, shards, source="core file", shard_sources=None):
    """The single model file of a core and its shards (bytes, in index order). Raises
    SplitError."""
    core = bytes(core)
    f = _File(core, source, want_core=True)
    rows_per_shard = f.rows_per_shard
    levels, lanes, head_bytes, group = _check_words(f, rows_per_shard)
    if f.words["bytes"] != head_bytes:
        f.fail(f"{WORD_EMBEDDINGS} has {f.words['bytes']} bytes in the core, expected "
               f"{head_bytes} (its rANS header alone)")
    expected = _shard_rows(f.vocab_size, rows_per_shard)
    if len(shards) != len(expected):
        f.fail(f"needs {len(expected)} shards of {rows_per_shard} rows, got {len(shards)}")
    parts = [[], [], [], []]
    for (index, first, count), shard in zip(expected, shards):
        name = shard_sources[index] if shard_sources else f"shard {index}"
        for part, piece in zip(parts, parse_shard(shard, f.crc, index, first, count, f.hidden,
                                                   group, name)):
            part.append(piece)
    words = f.data(f.words["offset"], f.words["offset"] + head_bytes) + b"".join(
        b"".join(part) for part in parts)
    if sum(len(x) for x in parts[1]) != 4 * lanes:
        f.fail(f"the shards hold {sum(len(x) for x in parts[1]) // 4} lanes, the rANS header "
               f"says {lanes}")

    start = f.words["offset"]
    shift = _shift(start, len(words), head_bytes)
    new_offsets = [(start, len(words))] + [
        (e["offset"] + shift, e["bytes"]) for e in f.entries[1:]]
    data = bytearray(f.data(0, start)) + words
    core_end = start + head_bytes
    if f.data_len > core_end:
        data += bytes(_align(len(data), modelfile.DATA_ALIGN) - len(data))
        data += f.data(_align(core_end, modelfile.DATA_ALIGN))
    head = _header_with(core, 0, 0, len(data), f.data_off + len(data), f.entries, new_offsets)
    return _finish(head, data)


def read_shards(shard_dir, count):
    """The bytes of shards 0..count-1 in shard_dir, and their paths; SplitError if one is
    missing or the folder holds shards beyond count."""
    paths = [os.path.join(shard_dir, shard_name(k)) for k in range(count)]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise SplitError(f"{shard_dir}: {len(missing)} of {count} shard files are missing, the "
                         f"first {missing[0]}")
    extra = sorted(n for n in os.listdir(shard_dir)
                   if re.fullmatch(r"\d{5}\.bin", n) and int(n[:5]) >= count)
    if extra:
        raise SplitError(f"{shard_dir}: holds {extra[0]}, but the core has {count} shards "
                         f"(00000.bin to {shard_name(count - 1)}); is it another model's "
                         f"folder?")
    shards = []
    for p in paths:
        with open(p, "rb") as fh:
            shards.append(fh.read())
    return shards, paths


def shard_count(core, source="core file"):
    """The number of shard files a core file expects."""
    f = _File(bytes(core), source, want_core=True)
    return len(_shard_rows(f.vocab_size, f.rows_per_shard))


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

def _write(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _split_command(args):
    with open(args.model, "rb") as fh:
        buf = fh.read()
    core, shards = split_bytes(buf, args.rows_per_shard, source=args.model)
    core_path, rows_dir = output_names(args.model, args.out_dir)
    os.makedirs(rows_dir, exist_ok=True)
    stale = [n for n in os.listdir(rows_dir) if re.fullmatch(r"\d{5}\.bin(\.tmp)?", n)]
    for name in stale:  # shards of an earlier split (another R) must not linger
        os.remove(os.path.join(rows_dir, name))
    for k, shard in enumerate(shards):
        _write(os.path.join(rows_dir, shard_name(k)), shard)
    _write(all_rows_name(rows_dir), b"".join(shards))
    _write(core_path, core)
    sizes = sorted(len(s) for s in shards)
    print(f"split {args.model} ({len(buf):,} bytes), {args.rows_per_shard} rows per shard:")
    print(f"  core   {core_path}: {len(core):,} bytes (CRC-32 "
          f"{struct.unpack_from('<I', core, _CRC_OFFSET)[0]:#010x})")
    print(f"  shards {rows_dir}/00000.bin .. {shard_name(len(shards) - 1)}: {len(shards):,} "
          f"files, {sum(sizes):,} bytes; per shard min {sizes[0]:,}, median "
          f"{int(statistics.median(sizes)):,}, max {sizes[-1]:,}")
    print(f"  all    {all_rows_name(rows_dir)}: the {len(shards):,} shards back to back, {sum(sizes):,} bytes")
    return 0


def _join_command(args):
    with open(args.core, "rb") as fh:
        core = fh.read()
    shards, paths = read_shards(args.shard_dir, shard_count(core, args.core))
    out = join_bytes(core, shards, source=args.core, shard_sources=paths)
    _write(args.out, out)
    print(f"join {args.core} + {len(shards):,} shards of {args.shard_dir}: wrote {args.out} "
          f"({len(out):,} bytes)")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m scripts.model.split_model",
        description="Split a model file into a core file and word-embedding shards, or join "
                    "them back (model_data/README.md, 'Split layout for the page').")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("split", help="MODEL.attn -> OUT_DIR/<stem>.core.attn + "
                                     "OUT_DIR/<stem>.rows/NNNNN.bin + OUT_DIR/<stem>.rows.bin")
    p.add_argument("model", metavar="MODEL.attn")
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument("--rows-per-shard", "-r", type=int, default=DEFAULT_ROWS_PER_SHARD,
                   metavar="R", help=f"word-embedding rows per shard (R x hidden a multiple of "
                                     f"{rans.LANE_LENGTH}; default {DEFAULT_ROWS_PER_SHARD})")
    p.set_defaults(run=_split_command)
    p = sub.add_parser("join", help="CORE.attn + SHARD_DIR -> the single OUT.attn")
    p.add_argument("core", metavar="CORE.attn")
    p.add_argument("shard_dir", metavar="SHARD_DIR")
    p.add_argument("out", metavar="OUT.attn")
    p.set_defaults(run=_join_command)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (OSError, SplitError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
