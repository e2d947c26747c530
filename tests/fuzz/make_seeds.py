"""Writes the committed seed corpora of the fuzz targets, tests/fuzz/corpus/<target>/.

A few small inputs per target that each reach the code past the first checks: model inputs that
load and are analysed, rans tensors that decode, texts with the characters the tokenizer and the
JSON writer treat specially. tokenizer and json take raw text; model_file and rans read their
input through libFuzzer's FuzzedDataProvider, so their seeds are written by `Provider` below,
which lays out the values in the order the target asks for them (tests/fuzz/*_fuzz.cc). If a
target changes what it reads, its seeds still run, only as other inputs: rerun this script.

Usage, from the repository root (like the project's other Python tools, a module run with the
root on the module path): "$PY" -m tests.fuzz.make_seeds   (rans needs numpy)
"""

import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parents[2]

CORPUS = ROOT / "tests" / "fuzz" / "corpus"


class Provider:
    """The bytes from which FuzzedDataProvider returns the values given here, in this order.

    It takes integers from the end of its data, each in as few bytes as its range needs, the
    first byte taken most significant, and keeps value % (range + 1); byte strings come from the
    front. So the input is the front bytes followed by the integer bytes in reverse order."""

    def __init__(self):
        self.front = bytearray()
        self.back = []  # integer bytes in the order they are taken

    def int(self, value, lo, hi):
        """ConsumeIntegralInRange(lo, hi) returning value."""
        assert lo <= value <= hi, (value, lo, hi)
        span, offset = hi - lo, value - lo
        count = 0
        while count < 8 and span >> (8 * count) > 0:
            count += 1
        self.back.extend((offset >> (8 * k)) & 0xFF for k in reversed(range(count)))
        return self

    def bool(self, value):
        """ConsumeBool(): the low bit of one byte."""
        self.back.append(1 if value else 0)
        return self

    def u32(self, value):
        """ConsumeIntegral<uint32_t>()."""
        return self.int(value, 0, 2**32 - 1)

    def bytes(self, data):
        """The text of ConsumeRandomLengthString, which stops at a backslash not doubled, so none
        may appear here."""
        assert b"\\" not in data
        self.front += data
        return self

    def raw(self, data):
        """ConsumeRemainingBytes(): whatever the integers leave, which is these bytes."""
        self.front += data
        return self

    def data(self):
        return bytes(self.front) + bytes(reversed(self.back))


# ---- model_file: tests/fuzz/model_file_fuzz.cc


def expected_shapes(config, masked_lm):
    """Element counts of ExpectedTensors(config, false, masked_lm) (core/tensor_table.cc), in
    table order, and whether each is 2-D (with its row length)."""
    v, d, f = config["vocab"], config["hidden"], config["intermediate"]
    shapes = [(v, d), (config["positions"], d), (config["type_vocab"], d), (d,), (d,)]
    for _ in range(config["layers"]):
        shapes += [(d, d), (d,), (d, d), (d,), (d, d), (d,), (d, d), (d,), (d,), (d,),
                   (f, d), (f,), (d, f), (d,), (d,), (d,)]
    if masked_lm:
        shapes += [(d, d), (d,), (d,), (d,), (v,)]
    return shapes


def model_input(config, masked_lm, dtypes, text):
    """One model_file_fuzz input: a config in the small ranges, each tensor's dtype taken in turn
    from dtypes (0 f32, 1 f16, 2 int8, 3 rans at 7 levels), weights a fixed pattern in the
    target's [-4, 4] steps of 1/16, no damaged bytes, then the text to analyse."""
    p = Provider()
    def dim(value, small_max):
        p.bool(True).int(value, 1, small_max)
    dim(config["heads"], 4)
    dim(config["hidden"] // config["heads"], 8)
    dim(config["layers"], 3)
    dim(config["intermediate"], 32)
    dim(config["positions"], 32)
    dim(config["type_vocab"], 2)
    dim(config["vocab"], 64)
    p.bool(True)  # layer_norm_eps = 1e-12
    p.bool(masked_lm)
    for index, shape in enumerate(expected_shapes(config, masked_lm)):
        numel = shape[0] * (shape[1] if len(shape) == 2 else 1)
        assert numel <= 4096, "bigger tensors are constant-zero rans and read nothing"
        dtype = dtypes[index % len(dtypes)]
        p.int(dtype, 0, 3)
        for k in range(numel):
            p.int((k * 37 + index * 11) % 129 - 64, -64, 64)
        if dtype == 3:
            p.int(7, 1, 300)
    p.int(0, 0, 3)  # no damaged bytes
    return p.bytes(text.encode()).data()


def model_seeds():
    one = dict(heads=1, hidden=1, layers=1, intermediate=1, positions=8, type_vocab=1, vocab=9)
    two = dict(heads=2, hidden=4, layers=1, intermediate=4, positions=12, type_vocab=2, vocab=9)
    # Config only: every draw after the last given byte is its minimum, so all weights are f32
    # -4.0 and the text is empty; the model still loads and analyses [CLS] [SEP].
    config_only = Provider()
    for value, small_max in ((4, 4), (8, 8), (2, 3), (32, 32), (32, 32), (2, 2), (64, 64)):
        config_only.bool(True).int(value, 1, small_max)
    config_only.bool(True).bool(True)
    return {
        "hidden1_f32": model_input(one, False, [0], "the cat."),
        "hidden1_mixed_mlm": model_input(one, True, [0, 1, 2, 3], "the cats [MASK]"),
        "hidden4_two_heads_rans_mlm": model_input(two, True, [3, 2], "the cat . the cats"),
        "config_only_4_heads": config_only.data(),
    }


# ---- rans: tests/fuzz/rans_fuzz.cc


def rans_header(p, mode, numel_case, numel_values, whole_group, group_bound=None):
    p.int(mode, 0, 2).int(numel_case, 0, 7)
    for value, lo, hi in numel_values:
        p.int(value, lo, hi)
    p.bool(whole_group)
    if not whole_group:
        p.int(group_bound[0], 1, group_bound[1])
    return p


def rans_round_trip(numel_case, numel_values, whole_group, group_bound, levels_case, levels,
                    spread, integers, scales):
    """Mode 0: integers coded by the test writer's encoder; fewer integers or scales than the
    tensor has leave the rest at their minimum (-spread, and a scale of -4)."""
    p = rans_header(Provider(), 0, numel_case, numel_values, whole_group, group_bound)
    p.int(levels_case, 0, 3).int(levels, 1, {0: 8, 1: 8, 2: 511, 3: 16383}[levels_case])
    p.int(spread, 0, levels)
    for q in integers:
        p.int(q, -spread, spread)
    for sixteenths in scales:
        p.int(0, 0, 7).int(sixteenths, -64, 64)
    if scales:
        p.bool(False)  # not damaged
    return p.data()


def rans_payload(levels, integers, group, scales):
    """A rans payload of the README's layout, coded by scripts/model/rans.py: an encoder other
    than the one the target uses, so the raw seed also checks that the two agree."""
    import numpy as np
    from scripts.model import rans
    symbols = np.asarray(integers) + levels
    freq = rans.frequencies(symbols, 2 * levels + 1)
    states, streams = rans.encode(symbols, freq)
    table = freq.astype("<u2").tobytes()
    table += b"\0" * (-len(table) % 4)
    assert len(scales) == len(integers) // group
    return b"".join([struct.pack("<II", levels, len(streams)), table,
                     struct.pack(f"<{len(scales)}f", *scales),
                     np.asarray(states, dtype="<u4").tobytes(),
                     np.array([len(x) for x in streams], dtype="<u4").tobytes()] + list(streams))


def rans_seeds():
    seeds = {
        # 16 values, one group, 7 levels.
        "round_trip_16_values": rans_round_trip(0, [(16, 1, 64)], True, None, 0, 7, 3,
                                                [0, 1, -1, 2, -3, 0, 0, 1, 3, -2, 0, 0, 1, -1, 2, 0],
                                                [24]),
        # 60 values in groups of 6 (60 % 6 == 0), 127 levels, a wide spread.
        "round_trip_groups_of_6": rans_round_trip(0, [(60, 1, 64)], False, (6, 60), 2, 127, 127,
                                                  [(k * 53) % 255 - 127 for k in range(60)],
                                                  [16, 12, 8, 4, 2, 1, -1, -4, -16, 64]),
        # 8,194 values, three lanes (the last of two values), all but the first few -1.
        "round_trip_three_lanes": rans_round_trip(7, [(2, 1, 3), (4, 0, 4)], True, None, 0, 2, 1,
                                                  [1, 0, 1, 1, 0, -1, 1], []),
    }
    # Mode 1, assembled: 5 values, levels 1, one symbol (0) with all 2^15 slots, scale 1.0, a lane
    # that starts and ends in 2^23 with no stream: zeros.
    p = rans_header(Provider(), 1, 0, [(5, 1, 64)], True)
    p.int(0, 0, 15).int(0, 0, 3).int(1, 1, 8).int(0, 0, 15)
    p.int(0, 0, 7).int(1, 1, 3).int(1, 0, 2).int(256, 1, 256)  # frequencies: symbol 1 (zero)
    p.int(0, 0, 7).int(16, -64, 64)  # scale 1.0
    p.int(0, 0, 7).int(0, 0, 64)  # state 2^23, an empty stream
    p.bool(False)
    seeds["assembled_one_symbol"] = p.data()
    # Mode 2, raw: a payload from the Python encoder, 40 values in groups of 8 at 15 levels.
    integers = [((k * 7) % 31) - 15 for k in range(40)]
    payload = rans_payload(15, integers, 8, [0.5, 0.25, 1.0, 2.0, 0.125])
    p = rans_header(Provider(), 2, 0, [(40, 1, 64)], False, (8, 40))
    seeds["raw_python_encoded"] = p.raw(payload).data()
    return seeds


# ---- shards: tests/fuzz/shards_fuzz.cc (its fixture has 10 shards)


def shards_seeds():
    def assembled(indexes, damage, extra=None):
        p = Provider().int(2, 0, 2).int(len(indexes), 0, 20)
        for k in indexes:
            p.int(k, 0, 9)
        p.int(damage, 0, 3)
        if damage == 3:
            p.int(extra, 0, 2**64 - 1)
        return p.data()

    return {
        "all_in_order": assembled(list(range(10)), 0),
        "three_reversed_length_changed": assembled([9, 4, 0], 3, 7),
        "raw_one_shard": Provider().int(0, 0, 2).raw(b"ATTNROWS\x01\x00\x00\x00\x40" + bytes(55)).data(),
        "raw_all_rows": Provider().int(1, 0, 2).raw(b"ATTNROWS" + bytes(56) + b"ATTN").data(),
    }


# ---- tokenizer and json: raw text


TEXTS = {
    "plain": b"The cat sat on the mat.",
    "accents_and_case": "Caf\u00e9 NA\u00cfVE r\u00e9sum\u00e9 \u0130stanbul".encode(),
    "cjk_and_emoji": "\u6211\u7231\u5317\u4eac cats\U0001F600 \u3002".encode(),
    "controls_and_spaces": b"tab\there\r\nnul\x00end \x7f\xc2\x85 \xe2\x80\xa8line",
    "invalid_utf8": b"ok \xff\xfe \xc0\xaf \xed\xa0\x80 \xe2\x82 \xf4\x90\x80\x80 end",
    "specials_and_punctuation": b"[CLS] the [MASK] sat, \"quoted\" \\ back/slash! [SEP]",
    "long_word": b"unbelievablyantidisestablishmentarianism " * 3,
}


def main():
    corpora = {
        "model_file": model_seeds(),
        "rans": rans_seeds(),
        "shards": shards_seeds(),
        "tokenizer": TEXTS,
        "json": TEXTS,
    }
    total = 0
    for target, seeds in corpora.items():
        folder = CORPUS / target
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for name, data in seeds.items():
            (folder / name).write_bytes(data)
            total += len(data)
            print(f"{target}/{name}: {len(data)} bytes")
    print(f"{total} bytes in all")


if __name__ == "__main__":
    main()
