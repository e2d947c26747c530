"""Tests of scripts/model/modelfile.py against the format in model_data/README.md."""

import json
import os
import struct
import unittest
import zlib

import numpy as np

from helpers import (ENTRY, HEADER, ROOT, OFF_CONFIG, OFF_CRC, OFF_EPS, OFF_FILE_SIZE,
                     OFF_NUM_TENSORS, OFF_VERSION, section, small_model, table_entries, u32, u64,
                     with_fixed_crc)
from scripts.model import modelfile, rans
from scripts.model.modelfile import ModelFileError


class ExpectedTableTest(unittest.TestCase):
    def test_one_layer_table_is_the_readme_list_in_order(self):
        config = modelfile.BertConfig(100, 8, 1, 2, 16, 10, 2, 1e-12)
        got = modelfile.expected_tensors(config, with_pooler=True, with_mlm_head=True)
        want = [
            ("embeddings.word_embeddings.weight", (100, 8)),
            ("embeddings.position_embeddings.weight", (10, 8)),
            ("embeddings.token_type_embeddings.weight", (2, 8)),
            ("embeddings.LayerNorm.weight", (8,)),
            ("embeddings.LayerNorm.bias", (8,)),
            ("encoder.layer.0.attention.self.query.weight", (8, 8)),
            ("encoder.layer.0.attention.self.query.bias", (8,)),
            ("encoder.layer.0.attention.self.key.weight", (8, 8)),
            ("encoder.layer.0.attention.self.key.bias", (8,)),
            ("encoder.layer.0.attention.self.value.weight", (8, 8)),
            ("encoder.layer.0.attention.self.value.bias", (8,)),
            ("encoder.layer.0.attention.output.dense.weight", (8, 8)),
            ("encoder.layer.0.attention.output.dense.bias", (8,)),
            ("encoder.layer.0.attention.output.LayerNorm.weight", (8,)),
            ("encoder.layer.0.attention.output.LayerNorm.bias", (8,)),
            ("encoder.layer.0.intermediate.dense.weight", (16, 8)),
            ("encoder.layer.0.intermediate.dense.bias", (16,)),
            ("encoder.layer.0.output.dense.weight", (8, 16)),
            ("encoder.layer.0.output.dense.bias", (8,)),
            ("encoder.layer.0.output.LayerNorm.weight", (8,)),
            ("encoder.layer.0.output.LayerNorm.bias", (8,)),
            ("pooler.dense.weight", (8, 8)),
            ("pooler.dense.bias", (8,)),
            ("cls.predictions.transform.dense.weight", (8, 8)),
            ("cls.predictions.transform.dense.bias", (8,)),
            ("cls.predictions.transform.LayerNorm.weight", (8,)),
            ("cls.predictions.transform.LayerNorm.bias", (8,)),
            ("cls.predictions.bias", (100,)),
        ]
        self.assertEqual(got, want)

    def test_required_count_grows_by_sixteen_per_layer(self):
        for layers in (1, 4, 12):
            config = modelfile.BertConfig(100, 8, layers, 2, 16, 10, 2, 1e-12)
            self.assertEqual(len(modelfile.expected_tensors(config)), 5 + 16 * layers)


class WriterLayoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = small_model(seed=3)
        cls.data = modelfile.serialize(cls.model)

    def test_header_fields_sit_at_the_readme_offsets(self):
        d, c = self.data, self.model.config
        self.assertEqual(d[:8], b"ATTNBERT")
        self.assertEqual(u32(d, OFF_VERSION), 1)
        self.assertEqual(u32(d, OFF_VERSION + 4), HEADER)
        self.assertEqual(struct.unpack_from("<7I", d, OFF_CONFIG),
                         (30522, 32, 2, 4, 64, 64, 2))
        self.assertEqual(struct.unpack_from("<f", d, OFF_EPS)[0], np.float32(1e-12))
        self.assertEqual(u32(d, OFF_NUM_TENSORS), len(self.model.tensors))
        self.assertEqual(u32(d, 52), 0)  # flags
        self.assertEqual(u64(d, OFF_FILE_SIZE), len(d))
        self.assertEqual(d[148:HEADER], bytes(108))
        self.assertEqual(c.vocab_size, 30522)

    def test_crc_is_zlib_crc32_of_everything_after_the_header(self):
        self.assertEqual(u32(self.data, OFF_CRC), zlib.crc32(self.data[HEADER:]) & 0xFFFFFFFF)

    def test_sections_are_in_order_inside_the_file_and_hold_their_contents(self):
        previous_end = HEADER
        for i in range(5):
            offset, length = section(self.data, i)
            self.assertGreaterEqual(offset, previous_end)
            previous_end = offset + length
        self.assertLessEqual(previous_end, len(self.data))
        name_off, name_len = section(self.data, 0)
        self.assertEqual(self.data[name_off:name_off + name_len].decode(), self.model.name)
        prov_off, prov_len = section(self.data, 1)
        self.assertIsInstance(json.loads(self.data[prov_off:prov_off + prov_len]), dict)
        vocab_off, vocab_len = section(self.data, 2)
        with open(os.path.join(ROOT, "model_data", "vocab.txt"), "rb") as f:
            self.assertEqual(self.data[vocab_off:vocab_off + vocab_len], f.read())
        table_off, table_len = section(self.data, 3)
        self.assertEqual(table_len, ENTRY * u32(self.data, OFF_NUM_TENSORS))
        self.assertEqual(section(self.data, 4)[0] % 64, 0)

    def test_f32_tensor_bytes_are_the_values_little_endian(self):
        data_off, data_len = section(self.data, 4)
        for name, dtype, shape, offset, nbytes, group in table_entries(self.data):
            self.assertEqual(offset % 64, 0, name)
            self.assertLessEqual(offset + nbytes, data_len, name)
            self.assertEqual((dtype, group), (0, 0), name)
            self.assertEqual(shape, self.model.tensors[name].shape)
            stored = np.frombuffer(self.data, "<f4", int(np.prod(shape)), data_off + offset)
            np.testing.assert_array_equal(stored, self.model.tensors[name].reshape(-1))

    def test_read_returns_what_was_written(self):
        back = modelfile.parse(self.data)
        self.assertEqual(back.config, self.model.config)
        self.assertEqual((back.name, back.provenance, back.vocab),
                         (self.model.name, self.model.provenance, self.model.vocab))
        self.assertEqual(list(back.tensors), list(self.model.tensors))
        for name, values in self.model.tensors.items():
            np.testing.assert_array_equal(back.tensors[name], values)
        self.assertEqual(modelfile.serialize(back), self.data)

    def test_optional_groups_may_be_left_out(self):
        bare = small_model(seed=3, pooler=False, mlm_head=False)
        back = modelfile.parse(modelfile.serialize(bare))
        self.assertFalse(back.has_pooler or back.has_mlm_head)
        self.assertEqual(len(back.tensors), 5 + 16 * 2)


class PrecisionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = small_model(seed=4, layers=1)

    def quantised(self, plan_text):
        data = modelfile.serialize(self.model, modelfile.parse_plan(plan_text))
        return data, modelfile.parse(data)

    def test_f16_is_within_half_an_f16_step(self):
        data, back = self.quantised("*=f16")
        for name, values in self.model.tensors.items():
            self.assertEqual(back.precision[name], ("f16", 0))
            # Relative step 2^-10 for normal halves; 2^-24 absolute below 2^-14.
            bound = np.maximum(np.abs(values) * 2.0 ** -11, 2.0 ** -25)
            self.assertTrue(np.all(np.abs(back.tensors[name] - values) <= bound), name)
        name, dtype, shape, offset, nbytes, group = table_entries(data)[0]
        self.assertEqual((dtype, nbytes), (1, 2 * int(np.prod(shape))))

    def test_int8_is_within_half_a_step_of_each_groups_scale(self):
        for rule, group_of in (("tensor", lambda s: int(np.prod(s))), ("row", lambda s: s[-1]),
                               ("16", lambda s: 16)):
            data, back = self.quantised(f"*.weight=int8:{rule},*=f32")
            for name, dtype, shape, offset, nbytes, group in table_entries(data):
                values = self.model.tensors[name]
                if not name.endswith(".weight"):
                    self.assertEqual(dtype, 0)
                    np.testing.assert_array_equal(back.tensors[name], values)
                    continue
                numel = int(np.prod(shape))
                self.assertEqual((dtype, group), (2, group_of(shape)), name)
                self.assertEqual(nbytes, numel + (-numel % 4) + 4 * (numel // group), name)
                groups = values.reshape(-1, group).astype(np.float64)
                step = np.abs(groups).max(axis=1, keepdims=True) / 127
                error = np.abs(back.tensors[name].reshape(-1, group) - groups)
                self.assertTrue(np.all(error <= step * (0.5 + 1e-4)), f"{name} {rule}")

    def test_int8_bytes_are_values_then_padding_then_scales(self):
        data, back = self.quantised("embeddings.LayerNorm.weight=int8:tensor")
        data_off, _ = section(data, 4)
        name, dtype, shape, offset, nbytes, group = [
            e for e in table_entries(data) if e[0] == "embeddings.LayerNorm.weight"][0]
        q = np.frombuffer(data, np.int8, 32, data_off + offset)
        scale = np.frombuffer(data, "<f4", 1, data_off + offset + 32)[0]
        self.assertEqual(np.abs(q).max(), 127)
        np.testing.assert_array_equal(back.tensors[name], q.astype(np.float32) * scale)

    def test_requantising_dequantised_weights_is_bit_identical(self):
        data, back = self.quantised("*.weight=int8:row,*.bias=f16,*=f32")
        again = modelfile.serialize(back, modelfile.plan_from_precision(back.precision))
        self.assertEqual(again, data)

    def test_group_that_does_not_fit_the_rows_is_refused(self):
        with self.assertRaisesRegex(ModelFileError, "group size 24 must divide"):
            self.quantised("encoder.layer.0.intermediate.dense.weight=int8:24")

    def test_plan_syntax_errors_name_the_entry(self):
        for text, message in (("*.weight", "expected PATTERN=DTYPE"), ("*=int4", "int4"),
                              ("*=f16:row", "only int8"), ("*=int8:rows", "group 'rows'")):
            with self.assertRaisesRegex(ModelFileError, message):
                modelfile.parse_plan(text)

    def test_f16_overflow_is_refused(self):
        model = small_model(seed=4, layers=1)
        model.tensors["embeddings.LayerNorm.bias"] = model.tensors[
            "embeddings.LayerNorm.bias"] + np.float32(70000)
        with self.assertRaisesRegex(ModelFileError, "overflow f16"):
            modelfile.serialize(model, modelfile.parse_plan("*=f16"))


class RansTest(unittest.TestCase):
    """The entropy-coded dtype: same values as the quantiser gives, layout as the README says,
    round trips, and damage refused."""

    @classmethod
    def setUpClass(cls):
        cls.model = small_model(seed=8, layers=1)

    def test_coder_round_trips_any_symbols(self):
        rng = np.random.default_rng(1)
        for numel, spread, alphabet in ((1, 0.0, 3), (4096, 3.0, 63), (4097, 40.0, 511),
                                        (20000, 0.2, 15)):
            symbols = np.clip(np.rint(rng.normal(alphabet // 2, spread, numel)), 0,
                              alphabet - 1).astype(np.int64)
            freq = rans.frequencies(symbols, alphabet)
            self.assertEqual(int(freq.sum()), rans.PROB_SCALE)
            self.assertTrue(np.all((freq > 0) == (np.bincount(symbols, minlength=alphabet) > 0)))
            states, streams = rans.encode(symbols, freq)
            self.assertEqual(len(streams), -(-numel // rans.LANE_LENGTH))
            np.testing.assert_array_equal(rans.decode(states, streams, freq, numel), symbols)
            # Close to the empirical entropy: within 1% plus the lanes' final bytes.
            counts = np.bincount(symbols)
            p = counts[counts > 0] / numel
            entropy_bytes = -(p * np.log2(p)).sum() * numel / 8
            self.assertLessEqual(sum(map(len, streams)), entropy_bytes * 1.01 + 4 * len(streams))

    def test_values_are_the_quantised_values(self):
        data = modelfile.serialize(self.model, modelfile.parse_plan(
            "*LayerNorm*=f32,*.weight=rans:row:1023,*=f32"))
        back = modelfile.parse(data)
        for name, dtype, shape, offset, nbytes, group in table_entries(data):
            values = self.model.tensors[name]
            if dtype == 0:
                np.testing.assert_array_equal(back.tensors[name], values)
                continue
            self.assertEqual((dtype, group, back.precision[name]),
                             (3, shape[-1], ("rans", shape[-1], 1023)), name)
            rows = values.reshape(-1, shape[-1]).astype(np.float64)
            step = np.abs(rows).max(axis=1, keepdims=True) / 1023
            error = np.abs(back.tensors[name].reshape(rows.shape) - rows)
            self.assertTrue(np.all(error <= step * (0.5 + 1e-3)), name)

    def test_127_levels_hold_exactly_the_int8_values_in_fewer_bytes(self):
        model = small_model(seed=9, layers=1)
        int8 = modelfile.serialize(model, modelfile.parse_plan("*.weight=int8:row,*=f32"))
        coded = modelfile.serialize(model, modelfile.parse_plan("*.weight=rans:row:127,*=f32"))
        a, b = modelfile.parse(int8), modelfile.parse(coded)
        for name in a.tensors:
            np.testing.assert_array_equal(a.tensors[name], b.tensors[name], name)
        name = "embeddings.word_embeddings.weight"
        size = {e[0]: e[4] for e in table_entries(coded)}[name]
        self.assertLess(size, {e[0]: e[4] for e in table_entries(int8)}[name])

    def test_payload_layout(self):
        data = modelfile.serialize(self.model, modelfile.parse_plan(
            "embeddings.position_embeddings.weight=rans:tensor:5"))
        data_off, _ = section(data, 4)
        name, dtype, shape, offset, nbytes, group = [
            e for e in table_entries(data) if e[0] == "embeddings.position_embeddings.weight"][0]
        at = data_off + offset
        numel = int(np.prod(shape))
        levels, lanes = struct.unpack_from("<II", data, at)
        self.assertEqual((dtype, group, levels, lanes), (3, numel, 5, -(-numel // 4096)))
        freq = np.frombuffer(data, "<u2", 11, at + 8)
        self.assertEqual(int(freq.sum()), 1 << 15)
        scale_at = at + 8 + 24  # 11 frequencies, padded to a multiple of 4
        scale = np.frombuffer(data, "<f4", 1, scale_at)[0]
        values = self.model.tensors[name]
        self.assertAlmostEqual(scale, np.abs(values).max() / 5, delta=scale * 1e-4)
        lengths = np.frombuffer(data, "<u4", lanes, scale_at + 4 + 4 * lanes)
        self.assertEqual(nbytes, 8 + 24 + 4 + 8 * lanes + int(lengths.sum()))

    def test_requantising_dequantised_weights_is_bit_identical(self):
        data = modelfile.serialize(self.model, modelfile.parse_plan(
            "*LayerNorm*=f32,embeddings.word_embeddings.weight=rans:row:2047,*.weight=rans:8:255,"
            "*=f16"))
        back = modelfile.parse(data)
        self.assertEqual(modelfile.serialize(back, modelfile.plan_from_precision(back.precision)),
                         data)

    def test_plan_errors(self):
        for text, message in (("*=rans:row:0", "levels '0'"), ("*=rans:row:16384", "16384"),
                              ("*=int8:row:5", "only rans takes levels"),
                              ("*=f16::5", "only rans takes levels"),
                              ("*=rans:rows", "group 'rows'")):
            with self.assertRaisesRegex(ModelFileError, message):
                modelfile.parse_plan(text)

    def damaged(self, change):
        data = bytearray(modelfile.serialize(self.model, modelfile.parse_plan(
            "embeddings.word_embeddings.weight=rans:row:255")))
        data_off, _ = section(data, 4)
        name, _, _, offset, nbytes, _ = table_entries(data)[0]
        change(data, data_off + offset, nbytes)
        return with_fixed_crc(data)

    def assertRejected(self, data, pattern):
        with self.assertRaisesRegex(ModelFileError,
                                    "embeddings.word_embeddings.weight: " + pattern):
            modelfile.parse(data)

    def test_damaged_payloads_are_refused(self):
        def put(fmt, delta, value=None):
            def change(data, at, nbytes):
                struct.pack_into(fmt, data, at + delta, value)
            return change

        self.assertRejected(self.damaged(put("<I", 0, 0)), "rans levels 0")
        self.assertRejected(self.damaged(put("<I", 4, 9)), "rans lane count 9")
        # The frequency table is Rice-coded at 255 levels (smaller than 511 u16): a flipped bit
        # of its code changes a frequency, or breaks the code.
        def flip_table_bit(data, at, nbytes):
            data[at + 16 + 20] ^= 0x04
        self.assertRejected(self.damaged(flip_table_bit),
                            "rans (frequencies sum to|coded table)")
        self.assertRejected(self.damaged(put("<I", 8, 15)), "rans coded table with parameter 15")

        def flip_stream_byte(data, at, nbytes):
            data[at + nbytes - 50] ^= 0x21
        self.assertRejected(self.damaged(flip_stream_byte), "rans streams are damaged")

        def shorter(data, at, nbytes):
            index = 0
            struct.pack_into("<Q", data, section(data, 3)[0] + index * ENTRY + 96, nbytes - 1)
        self.assertRejected(self.damaged(shorter), "rans streams take")


class CorruptFileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = modelfile.serialize(small_model(seed=5, layers=1))
        cls.bare = modelfile.serialize(small_model(seed=5, layers=1, pooler=False,
                                                   mlm_head=False))
        cls.entries = table_entries(cls.data)

    def assertRejected(self, data, pattern):
        with self.assertRaisesRegex(ModelFileError, pattern):
            modelfile.parse(data)

    def entry_offset(self, index):
        return section(self.data, 3)[0] + index * ENTRY

    def test_truncation_at_any_offset_is_rejected(self):
        size = len(self.data)
        for cut in (0, 1, 7, 8, 100, 255):
            self.assertRejected(self.data[:cut], "shorter than the 256-byte header")
        table_off = section(self.data, 3)[0]
        data_off = section(self.data, 4)[0]
        for cut in (256, 300, table_off + 5, data_off, data_off + 1000, size // 2, size - 1):
            self.assertRejected(self.data[:cut], f"header says {size} bytes but the file has")

    def test_truncation_with_a_consistent_header_is_still_rejected(self):
        cut = len(self.data) - 1000
        short = bytearray(self.data[:cut])
        struct.pack_into("<Q", short, OFF_FILE_SIZE, cut)
        self.assertRejected(with_fixed_crc(short), "tensor data section .* runs past the end")

    def test_bad_magic(self):
        self.assertRejected(b"GGUF" + self.data[4:], "bad magic")

    def test_unknown_version(self):
        data = bytearray(self.data)
        struct.pack_into("<I", data, OFF_VERSION, 2)
        self.assertRejected(bytes(data), "format version 2")

    def test_any_flipped_byte_after_the_header_fails_the_checksum(self):
        for position in (256, section(self.data, 2)[0] + 10, self.entry_offset(3) + 2,
                         len(self.data) - 1):
            data = bytearray(self.data)
            data[position] ^= 0x40
            self.assertRejected(bytes(data), "checksum mismatch")

    def test_changed_shape_names_the_tensor_got_and_expected(self):
        data = bytearray(self.data)
        struct.pack_into("<I", data, self.entry_offset(5) + 72, 31)
        self.assertRejected(with_fixed_crc(data),
                            r"encoder.layer.0.attention.self.query.weight: shape \[31, 32\], "
                            r"expected \[32, 32\]")

    def test_config_that_disagrees_with_the_tensors(self):
        data = bytearray(self.data)
        struct.pack_into("<I", data, OFF_CONFIG + 16, 128)  # intermediate_size
        self.assertRejected(with_fixed_crc(data), r"intermediate.dense.weight: shape \[64, 32\], "
                                                  r"expected \[128, 32\]")

    def test_swapped_tensor_order(self):
        data = bytearray(self.data)
        a, b = self.entry_offset(5), self.entry_offset(7)
        data[a:a + ENTRY], data[b:b + ENTRY] = self.data[b:b + ENTRY], self.data[a:a + ENTRY]
        self.assertRejected(with_fixed_crc(data), "entry 5 is encoder.layer.0.attention.self.key"
                                                  ".weight, expected .*query.weight")

    @staticmethod
    def without_last_entry(data):
        data = bytearray(data)
        count = u32(data, OFF_NUM_TENSORS)
        struct.pack_into("<I", data, OFF_NUM_TENSORS, count - 1)
        struct.pack_into("<Q", data, 56 + 16 * 3 + 8, (count - 1) * ENTRY)  # table bytes
        return with_fixed_crc(data)

    def test_missing_tensor(self):
        self.assertRejected(self.without_last_entry(self.bare),
                            "missing tensor encoder.layer.0.output.LayerNorm.bias")

    def test_incomplete_masked_lm_head(self):
        self.assertRejected(self.without_last_entry(self.data),
                            "masked-LM head is incomplete: missing cls.predictions.bias")

    def test_non_finite_value_names_the_tensor(self):
        data = bytearray(self.data)
        name, _, _, offset, _, _ = self.entries[3]
        struct.pack_into("<f", data, section(data, 4)[0] + offset + 8, float("nan"))
        self.assertRejected(with_fixed_crc(data), f"{name}: holds a non-finite value")

    def test_unknown_dtype(self):
        data = bytearray(self.data)
        struct.pack_into("<I", data, self.entry_offset(0) + 64, 7)
        self.assertRejected(with_fixed_crc(data), "unknown dtype 7")

    def test_byte_count_that_does_not_match_the_shape(self):
        data = bytearray(self.data)
        struct.pack_into("<Q", data, self.entry_offset(4) + 96, 4 * 31)
        self.assertRejected(with_fixed_crc(data), r"embeddings.LayerNorm.bias: 124 bytes, "
                                                  r"expected 128")

    def test_misaligned_tensor(self):
        data = bytearray(self.data)
        offset = u64(data, self.entry_offset(4) + 88)
        struct.pack_into("<Q", data, self.entry_offset(4) + 88, offset + 4)
        self.assertRejected(with_fixed_crc(data), "not a multiple of 64")

    def test_vocabulary_size_mismatch(self):
        data = bytearray(self.data)
        struct.pack_into("<I", data, OFF_CONFIG, 30521)
        self.assertRejected(with_fixed_crc(data), "vocabulary has 30522 entries, config "
                                                  "vocab_size is 30521")

    def test_heads_that_do_not_divide_hidden(self):
        data = bytearray(self.data)
        struct.pack_into("<I", data, OFF_CONFIG + 12, 5)
        self.assertRejected(with_fixed_crc(data), "not a multiple of num_attention_heads 5")


class WriterRefusalTest(unittest.TestCase):
    def test_wrong_shape(self):
        model = small_model(seed=6, layers=1)
        model.tensors["pooler.dense.bias"] = np.zeros(31, np.float32)
        with self.assertRaisesRegex(ModelFileError, r"pooler.dense.bias: shape \[31\], "
                                                    r"expected \[32\]"):
            modelfile.serialize(model)

    def test_non_finite(self):
        model = small_model(seed=6, layers=1)
        model.tensors["embeddings.LayerNorm.weight"][3] = np.inf
        with self.assertRaisesRegex(ModelFileError, "embeddings.LayerNorm.weight: holds a "
                                                    "non-finite"):
            modelfile.serialize(model)

    def test_partial_optional_group(self):
        model = small_model(seed=6, layers=1)
        del model.tensors["cls.predictions.bias"]
        with self.assertRaisesRegex(ModelFileError, "masked-LM head is incomplete: missing "
                                                    "cls.predictions.bias"):
            modelfile.serialize(model)

    def test_unexpected_tensor(self):
        model = small_model(seed=6, layers=1)
        model.tensors["classifier.weight"] = np.zeros((2, 32), np.float32)
        with self.assertRaisesRegex(ModelFileError, "unexpected tensor.*classifier.weight"):
            modelfile.serialize(model)


if __name__ == "__main__":
    unittest.main()
