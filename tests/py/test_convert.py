"""Tests of scripts/model/convert_model.py, scripts/model/safetensors_io.py and
scripts/get_model.sh."""

import contextlib
import io
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import numpy as np
import torch

from helpers import ROOT, small_model
from scripts.model import convert_model, modelfile, safetensors_io
from scripts.model.convert_model import ConversionError
from scripts.reference import reference_bert

# Both references read the same float32 weights and run in float64, so they should agree exactly;
# a loose bound still tells a real loading mistake (a transposed or swapped tensor) from noise.
REFERENCE_AGREEMENT = 1e-12


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="attn_convert_test_")
        self.addCleanup(shutil.rmtree, self.tmp)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def convert(self, *args):
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(convert_model.main(list(args)), 0)

    def hf_folder(self, state, config_overrides=None, use_safetensors=False, model=None):
        """A Hugging Face folder written by hand (not by the converter) from a state dict."""
        model = model or small_model(seed=21)
        folder = self.path("hf_by_hand")
        os.makedirs(folder, exist_ok=True)
        config = {"architectures": ["BertForMaskedLM"], "model_type": "bert",
                  "vocab_size": 30522, "hidden_size": 32, "num_hidden_layers": 2,
                  "num_attention_heads": 4, "intermediate_size": 64, "hidden_act": "gelu",
                  "max_position_embeddings": 64, "type_vocab_size": 2,
                  "layer_norm_eps": 1e-12, "_name_or_path": "someone/tiny-bert"}
        config.update(config_overrides or {})
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f)
        with open(os.path.join(folder, "vocab.txt"), "wb") as f:
            f.write(model.vocab)
        if use_safetensors:
            safetensors_io.save(os.path.join(folder, "model.safetensors"),
                                {k: v.numpy() if torch.is_tensor(v) else v
                                 for k, v in state.items()}, {"format": "pt"})
        else:
            torch.save(state, os.path.join(folder, "pytorch_model.bin"))
        return folder


class RoundTripTest(TempDirTest):
    def round_trip(self, plan=None, safetensors=False):
        original = self.path("original.attn")
        data = modelfile.write(original, small_model(seed=20),
                               modelfile.parse_plan(plan) if plan else None)
        hf = self.path("hf")
        self.convert("to-hf", original, hf, *(["--safetensors"] if safetensors else []))
        weights_file = "model.safetensors" if safetensors else "pytorch_model.bin"
        self.assertEqual(sorted(os.listdir(hf)),
                         sorted(["config.json", "vocab.txt", "tokenizer_config.json",
                                 weights_file]))
        again = self.path("again.attn")
        self.convert("to-attn", hf, again)
        with open(again, "rb") as f:
            self.assertEqual(f.read(), data, "attn -> HF -> attn is not bit-identical")

    def test_bin_round_trip_is_bit_identical(self):
        self.round_trip()

    def test_safetensors_round_trip_is_bit_identical(self):
        self.round_trip(safetensors=True)

    def test_quantised_round_trip_is_bit_identical(self):
        self.round_trip("*.weight=int8:row,*LayerNorm*=f16,*=f32")
        self.round_trip("embeddings.word_embeddings.weight=int8:8,*=f16", safetensors=True)

    def test_hf_folder_has_bert_for_masked_lm_names_and_tied_decoder(self):
        model = small_model(seed=20)
        original = self.path("m.attn")
        modelfile.write(original, model)
        self.convert("to-hf", original, self.path("hf"))
        state = torch.load(self.path("hf", "pytorch_model.bin"), weights_only=True)
        self.assertIn("bert.encoder.layer.1.output.LayerNorm.bias", state)
        self.assertIn("bert.pooler.dense.weight", state)
        self.assertIn("cls.predictions.transform.dense.weight", state)
        decoder = state["cls.predictions.decoder.weight"]
        self.assertEqual(decoder.data_ptr(),
                         state["bert.embeddings.word_embeddings.weight"].data_ptr())
        np.testing.assert_array_equal(state["bert.encoder.layer.0.attention.self.query.weight"],
                                      model.tensors["encoder.layer.0.attention.self.query.weight"])
        with open(self.path("hf", "config.json")) as f:
            config = json.load(f)
        self.assertEqual(config["architectures"], ["BertForMaskedLM"])
        self.assertEqual((config["hidden_act"], config["position_embedding_type"]),
                         ("gelu", "absolute"))
        self.assertEqual(config["layer_norm_eps"], 1e-12)
        self.assertEqual(config["num_hidden_layers"], 2)

    def test_model_without_head_gets_bert_model_names(self):
        original = self.path("bare.attn")
        modelfile.write(original, small_model(seed=20, pooler=False, mlm_head=False))
        self.convert("to-hf", original, self.path("hf"), "--safetensors")
        tensors, metadata = safetensors_io.load(self.path("hf", "model.safetensors"))
        self.assertEqual(metadata, {"format": "pt"})
        self.assertIn("embeddings.word_embeddings.weight", tensors)
        self.assertFalse(any(k.startswith(("bert.", "cls.")) for k in tensors))


class FromHuggingFaceTest(TempDirTest):
    def masked_lm_state(self, model):
        state = {("" if k.startswith("cls.") else "bert.") + k: torch.from_numpy(v.copy())
                 for k, v in model.tensors.items()}
        state["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"]
        state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"]
        state["bert.embeddings.position_ids"] = torch.arange(64)[None]
        return state

    def assertSameTensors(self, converted, model):
        self.assertEqual(list(converted.tensors), list(model.tensors))
        for name, values in model.tensors.items():
            np.testing.assert_array_equal(converted.tensors[name], values, name)

    def test_torch_bin_with_masked_lm_names_converts(self):
        model = small_model(seed=21)
        folder = self.hf_folder(self.masked_lm_state(model))
        self.convert("to-attn", folder, self.path("out.attn"))
        converted = modelfile.read(self.path("out.attn"))
        self.assertSameTensors(converted, model)
        self.assertEqual(converted.name, "someone/tiny-bert")
        provenance = json.loads(converted.provenance)
        self.assertEqual(set(provenance["files"]), {"config.json", "vocab.txt",
                                                    "pytorch_model.bin"})
        self.assertEqual(provenance["files"]["pytorch_model.bin"], convert_model.sha256_file(
            os.path.join(folder, "pytorch_model.bin")))

    def test_extra_provenance_is_recorded(self):
        model = small_model(seed=21)
        folder = self.hf_folder(self.masked_lm_state(model))
        extra = self.path("training.json")
        with open(extra, "w") as f:
            json.dump({"training": {"steps": 1000, "seed": 3}, "licence": "CC0"}, f)
        self.convert("to-attn", folder, self.path("out.attn"), "--provenance", extra,
                     "--source", "trained here")
        provenance = json.loads(modelfile.read(self.path("out.attn")).provenance)
        self.assertEqual(provenance["training"], {"steps": 1000, "seed": 3})
        self.assertEqual((provenance["licence"], provenance["source"]), ("CC0", "trained here"))

    def test_safetensors_with_bert_model_names_converts(self):
        model = small_model(seed=22, pooler=False, mlm_head=False)
        state = {k: v for k, v in model.tensors.items()}
        folder = self.hf_folder(state, {"_name_or_path": ""}, use_safetensors=True, model=model)
        self.convert("to-attn", folder, self.path("out.attn"), "--name", "My tiny BERT")
        converted = modelfile.read(self.path("out.attn"))
        self.assertSameTensors(converted, model)
        self.assertEqual(converted.name, "My tiny BERT")

    def test_name_defaults_to_the_folder(self):
        model = small_model(seed=22, pooler=False, mlm_head=False)
        folder = self.hf_folder(dict(model.tensors), {"_name_or_path": ""},
                                use_safetensors=True, model=model)
        self.convert("to-attn", folder, self.path("out.attn"))
        self.assertEqual(modelfile.read(self.path("out.attn")).name, "hf_by_hand")

    def test_pretraining_checkpoint_with_gamma_beta_and_nsp_head(self):
        model = small_model(seed=23, mlm_head=True)
        state = self.masked_lm_state(model)
        for key in list(state):
            if key.endswith("LayerNorm.weight"):
                state[key.replace("LayerNorm.weight", "LayerNorm.gamma")] = state.pop(key)
            elif key.endswith("LayerNorm.bias"):
                state[key.replace("LayerNorm.bias", "LayerNorm.beta")] = state.pop(key)
        state["cls.seq_relationship.weight"] = torch.zeros(2, 32)
        state["cls.seq_relationship.bias"] = torch.zeros(2)
        folder = self.hf_folder(state)
        self.convert("to-attn", folder, self.path("out.attn"))
        converted = modelfile.read(self.path("out.attn"))
        self.assertSameTensors(converted, model)
        self.assertEqual(json.loads(converted.provenance)["dropped_tensors"],
                         ["cls.seq_relationship.weight", "cls.seq_relationship.bias"])

    def test_bfloat16_and_float16_weights_are_widened(self):
        model = small_model(seed=24, pooler=False, mlm_head=False)
        state = {k: torch.from_numpy(v).half() for k, v in model.tensors.items()}
        folder = self.hf_folder(state, model=model)
        self.convert("to-attn", folder, self.path("out.attn"))
        converted = modelfile.read(self.path("out.attn"))
        for name, values in model.tensors.items():
            np.testing.assert_array_equal(converted.tensors[name],
                                          values.astype(np.float16).astype(np.float32))

    def test_changed_weights_get_fresh_provenance(self):
        original = self.path("m.attn")
        modelfile.write(original, small_model(seed=25))
        hf = self.path("hf")
        self.convert("to-hf", original, hf)
        state = torch.load(os.path.join(hf, "pytorch_model.bin"), weights_only=True)
        state["bert.pooler.dense.bias"] += 1.0  # as fine-tuning would
        torch.save(state, os.path.join(hf, "pytorch_model.bin"))
        self.convert("to-attn", hf, self.path("tuned.attn"))
        tuned = modelfile.read(self.path("tuned.attn"))
        provenance = json.loads(tuned.provenance)
        self.assertEqual(provenance["derived_from"]["provenance"]["generator"],
                         "scripts/reference/make_random_model.py")
        self.assertIn("pytorch_model.bin", provenance["files"])

    def test_reference_on_hf_folder_and_on_model_file_agree(self):
        model = small_model(seed=26)
        folder = self.hf_folder(self.masked_lm_state(model))
        self.convert("to-attn", folder, self.path("out.attn"))
        hf_config, hf_weights = reference_bert.load_hf_folder(folder)
        converted = modelfile.read(self.path("out.attn"))
        attn_weights = {k: torch.from_numpy(v) for k, v in converted.tensors.items()}
        ids = reference_bert.random_ids(20, 30522, np.random.default_rng(5))
        hidden_hf, attention_hf = reference_bert.forward(hf_config, hf_weights, ids)
        hidden_attn, attention_attn = reference_bert.forward(
            dict(converted.config.__dict__), attn_weights, ids)
        attention_diff = np.abs(attention_hf - attention_attn).max()
        hidden_diff = np.abs(hidden_hf - hidden_attn).max()
        print(f"\n  reference on HF folder vs on model file: attention max |diff| "
              f"{attention_diff:.2e}, hidden {hidden_diff:.2e}", end="")
        self.assertLessEqual(attention_diff, REFERENCE_AGREEMENT)
        self.assertLessEqual(hidden_diff, REFERENCE_AGREEMENT)


class RefusalTest(TempDirTest):
    def assertRefused(self, folder, pattern):
        with self.assertRaisesRegex(ConversionError, pattern):
            convert_model.model_from_hf(folder)

    def state(self, model=None):
        model = model or small_model(seed=30)
        return {("" if k.startswith("cls.") else "bert.") + k: torch.from_numpy(v.copy())
                for k, v in model.tensors.items()}

    def test_untied_decoder(self):
        state = self.state()
        state["cls.predictions.decoder.weight"] = state[
            "bert.embeddings.word_embeddings.weight"] * 1.5
        self.assertRefused(self.hf_folder(state), "decoder.weight differs from "
                                                  "embeddings.word_embeddings.weight")

    def test_other_activation(self):
        self.assertRefused(self.hf_folder(self.state(), {"hidden_act": "relu"}),
                           "hidden_act is 'relu'")

    def test_relative_positions(self):
        self.assertRefused(self.hf_folder(self.state(),
                                          {"position_embedding_type": "relative_key"}),
                           "position_embedding_type is 'relative_key'")

    def test_not_bert(self):
        self.assertRefused(self.hf_folder(self.state(), {"model_type": "roberta"}),
                           "model_type is 'roberta'")

    def test_task_head(self):
        # A fine-tune's task head (a classifier, a question-answering head) is left out, as the
        # next-sentence head is, and recorded: the encoder it was trained on is what the engine
        # runs. Any other tensor the engine has no place for is still refused.
        state = self.state()
        state["classifier.weight"] = torch.zeros(2, 32)
        state["classifier.bias"] = torch.zeros(2)
        state["qa_outputs.weight"] = torch.zeros(2, 32)
        model, _ = convert_model.model_from_hf(self.hf_folder(state))
        dropped = json.loads(model.provenance)["dropped_tensors"]
        self.assertEqual(sorted(dropped), ["classifier.bias", "classifier.weight", "qa_outputs.weight"])
        self.assertNotIn("classifier.weight", model.tensors)
        state = self.state()
        state["bert.encoder.adapter.weight"] = torch.zeros(2, 32)
        self.assertRefused(self.hf_folder(state), "no place for: encoder.adapter.weight")

    def test_missing_tensor(self):
        state = self.state()
        del state["bert.encoder.layer.1.intermediate.dense.bias"]
        self.assertRefused(self.hf_folder(state), "missing tensor "
                                                  "encoder.layer.1.intermediate.dense.bias")

    def test_shape_that_disagrees_with_config(self):
        self.assertRefused(self.hf_folder(self.state(), {"intermediate_size": 128}),
                           r"intermediate.dense.weight has shape \[64, 32\], config.json implies "
                           r"\[128, 32\]")

    def tokenizer_config(self, settings):
        folder = self.hf_folder(self.state())
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump(settings, f)
        return folder

    def test_tokenizer_that_is_not_bert(self):
        self.assertRefused(self.tokenizer_config({"tokenizer_class": "XLMRobertaTokenizer"}),
                           "tokenizer_class is 'XLMRobertaTokenizer'")

    def test_other_special_tokens(self):
        self.assertRefused(self.tokenizer_config({"unk_token": "<unk>"}), "unk_token is '<unk>'")
        self.assertRefused(self.tokenizer_config({"mask_token": {"content": "<mask>"}}), "mask_token is '<mask>'")

    def test_tokenizer_setting_of_the_wrong_type(self):
        self.assertRefused(self.tokenizer_config({"do_lower_case": "no"}), "do_lower_case is 'no'")
        self.assertRefused(self.tokenizer_config({"strip_accents": 1}), "strip_accents is 1")


    def test_no_weights(self):
        folder = self.hf_folder(self.state())
        os.remove(os.path.join(folder, "pytorch_model.bin"))
        self.assertRefused(folder, "no model.safetensors or pytorch_model.bin")

    def test_command_line_reports_error_and_fails(self):
        folder = self.hf_folder(self.state(), {"hidden_act": "gelu_new"})
        result = subprocess.run(["/usr/bin/python3", "-m", "scripts.model.convert_model",
                                 "to-attn", folder, self.path("x.attn")],
                                capture_output=True, text=True, cwd=ROOT)
        self.assertEqual(result.returncode, 1)
        self.assertIn("error: ", result.stderr)
        self.assertIn("hidden_act is 'gelu_new'", result.stderr)
        self.assertFalse(os.path.exists(self.path("x.attn")))


class TokenizerSettingsTest(TempDirTest):
    """A cased checkpoint's tokenizer settings travel into the model file (its header), out
    again with to-hf, through split and requantize, and the engine's CLI tokenizes with them."""

    CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))

    def folder_with(self, settings):
        model = small_model(seed=30)
        state = {("" if k.startswith("cls.") else "bert.") + k: torch.from_numpy(v.copy())
                 for k, v in model.tensors.items()}
        folder = self.hf_folder(state)
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump(settings, f)
        return folder

    def test_every_setting_round_trips(self):
        for settings in ({}, {"do_lower_case": False}, {"do_lower_case": False, "strip_accents": True},
                         {"do_lower_case": True, "strip_accents": False}, {"tokenize_chinese_chars": False},
                         {"tokenizer_class": "BertTokenizerFast", "do_lower_case": False,
                          "cls_token": {"content": "[CLS]"}}):
            expected = modelfile.TokenizerSettings(
                do_lower_case=settings.get("do_lower_case", True), strip_accents=settings.get("strip_accents"),
                tokenize_chinese_chars=settings.get("tokenize_chinese_chars", True))
            out = self.path("m.attn")
            self.convert("to-attn", self.folder_with(settings), out)
            self.assertEqual(modelfile.read(out).tokenizer, expected, settings)
            back = self.path("back")
            self.convert("to-hf", out, back)
            with open(os.path.join(back, "tokenizer_config.json")) as f:
                written = json.load(f)
            self.assertEqual(modelfile.TokenizerSettings.from_config(written, "to-hf"), expected)
            compact = self.path("c.attn")
            convert_model.write_requantized(modelfile.read(out), compact, "*=int8", out)
            self.assertEqual(modelfile.read(compact).tokenizer, expected)
        # Zero in the header is the uncased default, so files written before the field existed
        # read as what they were made for.
        self.assertEqual(modelfile.TokenizerSettings.from_word(0), modelfile.TokenizerSettings())
        with self.assertRaisesRegex(modelfile.ModelFileError, "not a combination"):
            modelfile.TokenizerSettings.from_word(6)

    def test_the_engine_tokenizes_with_the_files_settings(self):
        if not os.access(self.CLI, os.X_OK):
            self.fail(f"{self.CLI} is missing: build it with `cmake --build --preset native -j 2`")
        ids = {}
        for label, settings in (("uncased", {}), ("cased", {"do_lower_case": False})):
            out = self.path(f"{label}.attn")
            self.convert("to-attn", self.folder_with(settings), out)
            result = subprocess.run([self.CLI, "tokenize", "--model", out, "--json", "Hello Caf\u00e9"],
                                    capture_output=True, text=True, check=True)
            ids[label] = [t["text"] for t in json.loads(result.stdout)["tokens"]]
        # The uncased vocabulary has "hello" and "cafe"; cased, "Hello" and "Café" are not in it.
        self.assertEqual(ids["uncased"], ["[CLS]", "hello", "cafe", "[SEP]"])
        self.assertEqual(ids["cased"], ["[CLS]", "[UNK]", "[UNK]", "[SEP]"])
        # A header field this format does not know is refused by the engine, with its bytes.
        data = bytearray(open(self.path("cased.attn"), "rb").read())
        struct.pack_into("<I", data, modelfile.TOKENIZER_OFFSET, 0x10)
        bad = self.path("bad.attn")
        with open(bad, "wb") as f:
            f.write(data)
        result = subprocess.run([self.CLI, "tokenize", "--model", bad, "x"], capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("152..155", result.stderr)

class SafetensorsTest(TempDirTest):
    def test_layout_is_length_header_then_data(self):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        b = np.array([1, -2], dtype=np.int64)
        data = safetensors_io.dumps({"a": a, "b": b}, {"format": "pt"})
        (header_len,) = struct.unpack_from("<Q", data, 0)
        self.assertEqual((8 + header_len) % 8, 0)
        header = json.loads(data[8:8 + header_len])
        self.assertEqual(header["a"], {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]})
        self.assertEqual(header["b"], {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]})
        self.assertEqual(header["__metadata__"], {"format": "pt"})
        self.assertEqual(data[8 + header_len:], a.tobytes() + b.tobytes())
        tensors, metadata = safetensors_io.loads(data)
        np.testing.assert_array_equal(tensors["a"], a)
        np.testing.assert_array_equal(tensors["b"], b)

    def test_bfloat16_is_read_as_float32(self):
        # Values with at most 8 significant bits, which bfloat16 holds exactly.
        values = np.array([1.5, -2.25, 1.5 * 2.0 ** 40], dtype=np.float32)
        upper = torch.from_numpy(values).bfloat16().view(torch.int16).numpy().astype("<i2")
        header = json.dumps({"x": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}})
        data = struct.pack("<Q", len(header)) + header.encode() + upper.tobytes()
        tensors, _ = safetensors_io.loads(data)
        np.testing.assert_array_equal(tensors["x"], values)

    def test_truncated_file_is_rejected(self):
        data = safetensors_io.dumps({"a": np.zeros(10, np.float32)})
        with self.assertRaisesRegex(safetensors_io.SafetensorsError, "outside the"):
            safetensors_io.loads(data[:-4])
        with self.assertRaisesRegex(safetensors_io.SafetensorsError, "runs past the end"):
            safetensors_io.loads(data[:20])


class GetModelTest(TempDirTest):
    """scripts/get_model.sh against a hub on the local disk (file://) and an endpoint nobody
    listens on; the tests never reach the network."""

    def run_script(self, model_id, out, endpoint):
        env = dict(os.environ, HF_ENDPOINT=endpoint)
        return subprocess.run([os.path.join(ROOT, "scripts", "get_model.sh"), model_id, out],
                              capture_output=True, text=True, env=env, timeout=120)

    def test_downloads_and_converts(self):
        model = small_model(seed=40, pooler=False)
        original = self.path("m.attn")
        modelfile.write(original, model)
        hub = self.path("hub", "test-org", "tiny-bert", "resolve", "main")
        convert_model.write_hf_folder(modelfile.read(original), hub, use_safetensors=True)
        result = self.run_script("test-org/tiny-bert", self.path("got.attn"),
                                 "file://" + self.path("hub"))
        self.assertEqual(result.returncode, 0, result.stderr)
        got = modelfile.read(self.path("got.attn"))
        self.assertEqual(got.name, "test-org/tiny-bert")
        for name, values in model.tensors.items():
            np.testing.assert_array_equal(got.tensors[name], values)

    def test_unknown_model_says_so(self):
        os.makedirs(self.path("hub"))
        result = self.run_script("test-org/missing", self.path("x.attn"),
                                 "file://" + self.path("hub"))
        self.assertEqual(result.returncode, 3)
        self.assertIn("has no config.json", result.stderr)

    def test_no_internet_fails_fast_with_a_clear_message(self):
        result = self.run_script("test-org/tiny-bert", self.path("x.attn"), "http://127.0.0.1:9")
        self.assertEqual(result.returncode, 3)
        self.assertIn("no internet", result.stderr)
        self.assertFalse(os.path.exists(self.path("x.attn")))


if __name__ == "__main__":
    unittest.main()
