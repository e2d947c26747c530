"""Tests of the split model layout (model_data/README.md, "Split layout for the page"):
scripts/model/split_model.py against the byte layouts of the README, on a small random model and
on the shipped compact file, and the C++ engine (attention-cli --shards) on the split files
against the single file.

The CLI tests need the native build with --shards (scripts/build.sh native) and fail without it
(ATTN_ALLOW_SKIP=1 skips); ATTN_CLI points them at another binary."""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

import numpy as np

from helpers import (HEADER, OFF_CRC, OFF_FILE_SIZE, ROOT, require_input, requires_input,
                     section, small_model, table_entries, u32, u64)
from scripts.model import modelfile, rans, split_model
from scripts.model.split_model import SplitError

CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
COMPACT = os.path.join(ROOT, "model_data", "explainer-mini.compact.attn")
SENTENCES = os.path.join(ROOT, "tests", "fixtures", "precision_sentences_validation.txt")
WORDS = "embeddings.word_embeddings.weight"
PLAN = "embeddings.word_embeddings.weight=rans:row:1023,*=f32"

# Offsets typed from the README, not taken from split_model.py.
OFF_FLAGS = 52
OFF_ROWS_PER_SHARD = 148
SHARD_HEADER = 64
LANE = 4096


CODED = 1 << 31


def rans_table(raw):
    """(levels, frequencies, header bytes) of a rans tensor's header, by the README layout: a
    plain table of u16, or (levels word bit 31) a Rice code: parameter k, code bytes, then per
    symbol ones ended by a zero and k low bits, least significant bit first."""
    word, _ = struct.unpack_from("<II", raw)
    levels, alphabet = word & ~CODED, 2 * (word & ~CODED) + 1
    if not word & CODED:
        head = 8 + 2 * alphabet
        return levels, list(struct.unpack_from(f"<{alphabet}H", raw, 8)), head + -head % 4
    k, size = struct.unpack_from("<II", raw, 8)
    bits = "".join(f"{byte:08b}"[::-1] for byte in raw[16:16 + size])
    freq, at = [], 0
    for _ in range(alphabet):
        stop = bits.index("0", at)
        low = int(bits[stop + 1:stop + 1 + k][::-1] or "0", 2)
        freq.append((stop - at) << k | low)
        at = stop + 1 + k
    return levels, freq, 16 + size


def rans_parts(raw, numel, group):
    """(header bytes, scales, states, lengths, streams) of a rans tensor, by the README layout."""
    _, lanes = struct.unpack_from("<II", raw)
    head = rans_table(raw)[2]
    scales_end = head + 4 * (numel // group)
    states_end = scales_end + 4 * lanes
    lengths_end = states_end + 4 * lanes
    return (raw[:head], raw[head:scales_end], raw[scales_end:states_end],
            raw[states_end:lengths_end], raw[lengths_end:])


def tensor_bytes(buf, entry):
    data_offset, _ = section(buf, 4)
    return buf[data_offset + entry[3]:data_offset + entry[3] + entry[4]]


def shard_fields(shard):
    """(magic, version, header bytes, core CRC, index, first row, rows, payload bytes, payload
    CRC) at the README's shard header offsets."""
    return (shard[:8], u32(shard, 8), u32(shard, 12), u32(shard, 16), u32(shard, 20),
            u32(shard, 24), u32(shard, 28), u64(shard, 32), u32(shard, 40))


class SplitLayoutChecks:
    """Checks of one (single file, R) pair; mixed into the test cases below."""

    def check_layout(self, single, rows):
        core, shards = split_model.split_bytes(single, rows)
        self.assertEqual(split_model.join_bytes(core, shards), single, "join(split(x)) != x")
        entries, core_entries = table_entries(single), table_entries(core)
        vocab, hidden = entries[0][2]
        group = entries[0][5]

        # Core header: the flag, R, reserved zero, its own size and CRC.
        self.assertEqual(u32(core, OFF_FLAGS), 1)
        self.assertEqual(u32(core, OFF_ROWS_PER_SHARD), rows)
        self.assertEqual(core[152:HEADER], bytes(HEADER - 152))
        self.assertEqual(u64(core, OFF_FILE_SIZE), len(core))
        self.assertEqual(u32(core, OFF_CRC), zlib.crc32(core[HEADER:]) & 0xFFFFFFFF)
        self.assertEqual(core[16:OFF_FLAGS], single[16:OFF_FLAGS])  # config, tensor count
        for i in range(4):  # name, provenance, vocabulary, table: same place, same bytes
            offset, nbytes = section(single, i)
            self.assertEqual(section(core, i), (offset, nbytes))
            self.assertEqual(core[offset:offset + nbytes if i < 3 else offset],
                             single[offset:offset + nbytes if i < 3 else offset])
        self.assertEqual(section(core, 4)[0], section(single, 4)[0])

        # Tensor table: the same entries; the word embeddings hold only their rANS header.
        numel = vocab * hidden
        parts = rans_parts(tensor_bytes(single, entries[0]), numel, group)
        self.assertEqual(len(core_entries), len(entries))
        name, dtype, shape, _, nbytes, core_group = core_entries[0]
        self.assertEqual((name, dtype, shape, core_group), (WORDS, 3, (vocab, hidden), group))
        self.assertEqual(nbytes, len(parts[0]))
        self.assertEqual(tensor_bytes(core, core_entries[0]), parts[0])
        for want, got in zip(entries[1:], core_entries[1:]):
            self.assertEqual(got[:3] + got[4:], want[:3] + want[4:])
            self.assertEqual(got[3] % 64, 0)
            self.assertEqual(tensor_bytes(core, got), tensor_bytes(single, want), got[0])

        # Shards: header fields, checksums, and the payload as the single file's pieces.
        core_crc = u32(core, OFF_CRC)
        starts = [0]
        for length in struct.unpack(f"<{len(parts[3]) // 4}I", parts[3]):
            starts.append(starts[-1] + length)
        self.assertEqual(len(shards), -(-vocab // rows))
        for k, shard in enumerate(shards):
            first, count = k * rows, min(rows, vocab - k * rows)
            payload = shard[SHARD_HEADER:]
            self.assertEqual(shard_fields(shard),
                             (b"ATTNROWS", 1, 64, core_crc, k, first, count, len(payload),
                              zlib.crc32(payload) & 0xFFFFFFFF), f"shard {k}")
            self.assertEqual(shard[44:SHARD_HEADER], bytes(20))
            lane0, lanes = first * hidden // LANE, -(-count * hidden // LANE)
            scale0, scales = first * hidden // group, count * hidden // group
            want = (parts[1][4 * scale0:4 * (scale0 + scales)]
                    + parts[2][4 * lane0:4 * (lane0 + lanes)]
                    + parts[3][4 * lane0:4 * (lane0 + lanes)]
                    + parts[4][starts[lane0]:starts[lane0 + lanes]])
            self.assertEqual(payload, want, f"shard {k} payload")
        return core, shards


class SmallModelSplitTest(SplitLayoutChecks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = small_model(seed=5)  # hidden 32: R is a multiple of 4096 / 32 = 128
        cls.single = modelfile.serialize(cls.model, modelfile.parse_plan(PLAN))
        cls.tmp = tempfile.mkdtemp(prefix="attn_split_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_split_then_join_is_byte_identical_and_follows_the_layout(self):
        # 128: the smallest R; 384: the last shard shorter (30,522 = 79 x 384 + 186); 32,768:
        # one shard of every row.
        for rows in (128, 384, 32768):
            with self.subTest(rows=rows):
                self.check_layout(self.single, rows)

    def test_shard_rows_decode_to_the_single_files_rows_bit_for_bit(self):
        core, shards = split_model.split_bytes(self.single, 256)
        want = modelfile.parse(self.single).tensors[WORDS]
        hidden = want.shape[1]
        levels, freq, _ = rans_table(tensor_bytes(core, table_entries(core)[0]))
        freq = np.array(freq, dtype=np.int64)
        got = []
        for shard in shards:
            count = u32(shard, 28)
            numel, lanes = count * hidden, -(-count * hidden // LANE)
            payload = shard[SHARD_HEADER:]
            scales = np.frombuffer(payload, dtype="<f4", count=count)  # one scale per row
            states = np.frombuffer(payload, dtype="<u4", count=lanes, offset=4 * count)
            lengths = np.frombuffer(payload, dtype="<u4", count=lanes,
                                    offset=4 * count + 4 * lanes)
            at, streams = 4 * count + 8 * lanes, []
            for length in lengths:
                streams.append(payload[at:at + int(length)])
                at += int(length)
            q = rans.decode(states, streams, freq, numel).astype(np.float32) - levels
            got.append(q.reshape(count, hidden) * scales[:, None])
        self.assertTrue(np.array_equal(np.concatenate(got), want))

    def test_rows_per_shard_must_fill_whole_lanes(self):
        for rows in (0, -128, 64, 100, 129):
            with self.subTest(rows=rows):
                with self.assertRaisesRegex(SplitError, r"R x hidden \(.*\) must be a positive "
                                            r"multiple of 4096.*multiple of 128"):
                    split_model.split_bytes(self.single, rows)

    def test_a_word_embedding_table_that_is_not_rans_is_refused(self):
        for plan in ("*=f32", "embeddings.word_embeddings.weight=int8:row,*=f32",
                     "embeddings.word_embeddings.weight=f16,*.weight=rans:row:127,*=f32"):
            with self.subTest(plan=plan):
                single = modelfile.serialize(self.model, modelfile.parse_plan(plan))
                with self.assertRaisesRegex(SplitError, r"word_embeddings.weight is (f32|int8|"
                                            r"f16); the split layout needs dtype rans"):
                    split_model.split_bytes(single, 128)

    def test_a_scale_group_that_does_not_divide_a_shard_is_refused(self):
        # One scale per 3 rows (96 values; 30,522 = 3 x 10,174): whole groups need R a multiple
        # of 384, not just of 128.
        single = modelfile.serialize(self.model, modelfile.parse_plan(
            "embeddings.word_embeddings.weight=rans:96:63,*=f32"))
        with self.assertRaisesRegex(SplitError, "group size 96, which does not divide R x "
                                    "hidden = 4096"):
            split_model.split_bytes(single, 128)
        self.check_layout(single, 384)
        whole = modelfile.serialize(self.model, modelfile.parse_plan(
            "embeddings.word_embeddings.weight=rans:tensor:63,*=f32"))
        with self.assertRaisesRegex(SplitError, "group size 976704, which does not divide"):
            split_model.split_bytes(whole, 30592)

    def test_split_refuses_a_core_and_join_refuses_a_single_file(self):
        core, shards = split_model.split_bytes(self.single, 128)
        with self.assertRaisesRegex(SplitError, "this is a core file"):
            split_model.split_bytes(core, 128)
        with self.assertRaisesRegex(SplitError, "not a core file"):
            split_model.join_bytes(self.single, shards)

    def test_join_refuses_corrupt_foreign_misplaced_and_missing_shards(self):
        core, shards = split_model.split_bytes(self.single, 128)
        other = modelfile.serialize(small_model(seed=6), modelfile.parse_plan(PLAN))
        _, other_shards = split_model.split_bytes(other, 128)
        flipped = bytearray(shards[3])
        flipped[SHARD_HEADER + 100] ^= 0x01
        cases = [
            (3, bytes(flipped), "shard 3: checksum mismatch: payload CRC-32"),
            (3, other_shards[3], "shard 3: belongs to another model"),
            (3, shards[4], r"shard 3: holds shard 4 \(rows 512, 128 of them\), expected shard 3"),
            (3, shards[3][:-1], "shard 3: header says .* payload bytes, the file has"),
            (3, b"ATTNBERT" + bytes(100), "shard 3: not a shard file"),
        ]
        for k, bad, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(SplitError, message):
                    split_model.join_bytes(core, shards[:k] + [bad] + shards[k + 1:])
        with self.assertRaisesRegex(SplitError, "needs 239 shards of 128 rows, got 238"):
            split_model.join_bytes(core, shards[:-1])

    def test_command_line_writes_the_names_and_reports_the_sizes(self):
        src = os.path.join(self.tmp, "tiny.attn")
        with open(src, "wb") as f:
            f.write(self.single)
        out = os.path.join(self.tmp, "site")
        run = subprocess.run([sys.executable, "-m", "scripts.model.split_model", "split", src, out,
                              "--rows-per-shard", "256"], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        core_path, rows_dir = os.path.join(out, "tiny.core.attn"), os.path.join(out, "tiny.rows")
        names = sorted(os.listdir(rows_dir))
        self.assertEqual(names, [f"{k:05d}.bin" for k in range(120)])
        sizes = sorted(os.path.getsize(os.path.join(rows_dir, n)) for n in names)
        self.assertIn(f"{os.path.getsize(core_path):,} bytes", run.stdout)
        self.assertIn(f"120 files, {sum(sizes):,} bytes; per shard min {sizes[0]:,}", run.stdout)
        self.assertIn(f"max {sizes[-1]:,}", run.stdout)

        # A second split with another R leaves no stale shard behind.
        run = subprocess.run([sys.executable, "-m", "scripts.model.split_model", "split", src, out,
                              "-r", "128"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(len(os.listdir(rows_dir)), 239)

        joined = os.path.join(self.tmp, "joined.attn")
        run = subprocess.run([sys.executable, "-m", "scripts.model.split_model", "join", core_path,
                              rows_dir, joined], cwd=ROOT, capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        with open(joined, "rb") as f:
            self.assertEqual(f.read(), self.single)

        os.remove(os.path.join(rows_dir, "00007.bin"))
        run = subprocess.run([sys.executable, "-m", "scripts.model.split_model", "join", core_path,
                              rows_dir, joined], cwd=ROOT, capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(run.returncode, 1)
        self.assertIn("1 of 239 shard files are missing, the first", run.stderr)
        self.assertIn("00007.bin", run.stderr)
        run = subprocess.run([sys.executable, "-m", "scripts.model.split_model", "split", src, out,
                              "-r", "100"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 1)
        self.assertIn("must be a positive multiple of 4096", run.stderr)


class ShippedModelSplitTest(SplitLayoutChecks, unittest.TestCase):
    def setUp(self):
        require_input(COMPACT, "make it with scripts/training/make_compact_model.sh")
        with open(COMPACT, "rb") as f:
            self.single = f.read()

    def test_split_then_join_is_byte_identical_and_follows_the_layout(self):
        for rows in (split_model.DEFAULT_ROWS_PER_SHARD, 16, 1024):
            with self.subTest(rows=rows):
                core, shards = self.check_layout(self.single, rows)
                words = table_entries(self.single)[0]
                print(f"\n  compact, R = {rows}: core {len(core):,} bytes, {len(shards)} shards, "
                      f"{sum(map(len, shards)):,} bytes (the table was {words[4]:,})", end="")

    def test_the_shipped_table_needs_a_multiple_of_16_rows(self):
        with self.assertRaisesRegex(SplitError, "for hidden 256, R is a multiple of 16"):
            split_model.split_bytes(self.single, 24)


def cli_has_shards():
    help_text = subprocess.run([CLI, "analyze", "--help"], capture_output=True, text=True)
    return "--shards" in help_text.stdout + help_text.stderr


@requires_input(CLI, "build it with scripts/build.sh native", executable=True)
class ShardedCliTest(unittest.TestCase):
    """The engine on core + shards gives exactly the single file's output, and refuses missing,
    corrupt and foreign shards with a message."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="attn_split_cli_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def setUp(self):
        self.assertTrue(cli_has_shards(), f"{CLI} has no --shards option; rebuild it with "
                        f"scripts/build.sh native")

    def split(self, single_path, rows=None):
        out = tempfile.mkdtemp(dir=self.tmp)
        args = [sys.executable, "-m", "scripts.model.split_model", "split", single_path, out]
        if rows:
            args += ["--rows-per-shard", str(rows)]
        run = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        return split_model.output_names(single_path, out)

    def analyze(self, model, text, shards=None, check=True):
        args = [CLI, "analyze", "--json", "--hidden", "--model", model]
        if shards:
            args += ["--shards", shards]
        run = subprocess.run(args + ["-"], input=text, capture_output=True, text=True,
                             timeout=120)
        if check:
            self.assertEqual(run.returncode, 0, run.stderr)
        return run

    def test_split_compact_model_gives_the_single_files_output_exactly(self):
        require_input(COMPACT, "make it with scripts/training/make_compact_model.sh")
        core, rows_dir = self.split(COMPACT)
        with open(SENTENCES, encoding="utf-8") as f:
            sentences = [line.rstrip("\n") for line in f][:20]
        for text in sentences:
            single = self.analyze(COMPACT, text).stdout
            split = self.analyze(core, text, rows_dir).stdout
            if split != single:
                self.fail(f"{text!r}: core + shards differ from the single file; "
                          f"{self.diagnose(single, split, text)}")
            result = json.loads(split)
            self.assertIn("attention", result)
            self.assertIn("rollout", result)
            self.assertIn("hidden", result)
        # The all-rows file is every shard back to back, and loads as the folder does.
        all_rows = split_model.all_rows_name(rows_dir)
        names = sorted(n for n in os.listdir(rows_dir) if n.endswith(".bin"))
        with open(all_rows, "rb") as f:
            together = f.read()
        joined = b""
        for name in names:
            with open(os.path.join(rows_dir, name), "rb") as f:
                joined += f.read()
        self.assertEqual(together, joined, "the all-rows file is not the shards in index order")
        for text in sentences[:3]:
            self.assertEqual(self.analyze(core, text, all_rows).stdout, self.analyze(COMPACT, text).stdout,
                             f"{text!r}: core + the all-rows file differ from the single file")
        print(f"\n  core + shards vs the single file: identical output on {len(sentences)} "
              f"sentences (and on 3 with the all-rows file)", end="")

    def diagnose(self, single, split, text):
        """Why two outputs differ: the largest differences, and whether the single file's own
        output moves with the heap layout (then the engine, not the split, is at fault)."""
        a, b = json.loads(single), json.loads(split)
        diffs = {key: float(np.abs(np.array(a[key]) - np.array(b[key])).max())
                 for key in ("attention", "rollout", "hidden")}
        heaps = {}
        for tunable in ("glibc.malloc.top_pad=8", "glibc.malloc.mmap_threshold=100000000"):
            env = dict(os.environ, GLIBC_TUNABLES=tunable)
            run = subprocess.run([CLI, "analyze", "--json", "--hidden", "--model", COMPACT, "-"],
                                 input=text, capture_output=True, text=True, timeout=120, env=env)
            heaps[tunable] = ("itself" if run.stdout == single else
                              "the split's output" if run.stdout == split else "neither")
        return (f"max |diff| {diffs}; the single file run with GLIBC_TUNABLES="
                + ", ".join(f"{k} gives {v}" for k, v in heaps.items())
                + " (anything but 'itself' means the engine's results depend on where the heap "
                  "puts its buffers, e.g. Eigen's vectorised loops peeling by alignment)")

    def make_small(self, seed):
        path = os.path.join(self.tmp, f"seed{seed}", "tiny.attn")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        modelfile.write(path, small_model(seed=seed), modelfile.parse_plan(PLAN))
        return path

    def test_missing_corrupt_and_foreign_shards_give_the_clis_error(self):
        single = self.make_small(7)
        core, rows_dir = self.split(single, 128)
        text = "The cat sat on the mat."
        self.assertEqual(self.analyze(core, text, rows_dir).stdout,
                         self.analyze(single, text).stdout)
        ids = [t["id"] for t in json.loads(self.analyze(single, text).stdout)["tokens"]]
        needed = ids[2] // 128  # the shard of "cat"
        name = f"{needed:05d}.bin"

        def variant(label, change):
            folder = os.path.join(self.tmp, label)
            shutil.copytree(rows_dir, folder)
            change(os.path.join(folder, name))
            run = self.analyze(core, text, folder, check=False)
            self.assertNotEqual(run.returncode, 0, f"{label}: the CLI accepted it")
            self.assertEqual(run.stdout, "")
            return run.stderr

        stderr = variant("missing", os.remove)
        self.assertIn(f"shard {needed}", stderr)
        self.assertIn("not loaded", stderr)

        def flip(path):
            with open(path, "r+b") as f:
                f.seek(SHARD_HEADER + 10)
                byte = f.read(1)
                f.seek(SHARD_HEADER + 10)
                f.write(bytes([byte[0] ^ 0x01]))
        stderr = variant("corrupt", flip)
        self.assertIn(name, stderr)
        self.assertIn("checksum", stderr)

        _, other_dir = self.split(self.make_small(8), 128)
        stderr = variant("foreign", lambda path: shutil.copyfile(
            os.path.join(other_dir, name), path))
        self.assertIn(name, stderr)
        print(f"\n  foreign shard: {stderr.strip()}", end="")


if __name__ == "__main__":
    unittest.main()
