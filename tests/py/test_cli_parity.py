"""The C++ engine (attention-cli) on files written by scripts/model/modelfile.py in every
precision, against the reference run on the weights as the Python reader decodes them. This checks
that the two readers agree on the f16, int8 and rans encodings; the f32 parity on many lengths is
the C++ parity test's job (tests/cpp, fixtures from scripts/reference/make_test_fixtures.sh).

Needs the native build (scripts/build.sh native) and fails without it (ATTN_ALLOW_SKIP=1 skips);
set ATTN_CLI to use another binary."""

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import torch

from bert_reference import BertReference
from helpers import cased_vocabulary, ROOT, requires_input, small_model
from scripts.model import modelfile
from scripts.reference import make_random_model, reference_bert

CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
# The fp32 attention bar (docs/ARCHITECTURE.md, "Fidelity bars"): float32 engine against the
# float64 reference.
ATTENTION_TOLERANCE = 1e-5
HIDDEN_TOLERANCE = 1e-4  # the hidden-state bar of the C++ parity test
MODEL = os.path.join(ROOT, "model_data", "explainer-mini.compact.attn")
SENTENCE = "The quick brown fox jumps over the lazy dog, and then it naps."
PLANS = (None,
         "*.weight=int8:row,*LayerNorm*=f16,*=f32",
         "embeddings.word_embeddings.weight=int8:tensor,*.weight=int8:16,*=f16",
         "*LayerNorm*=f32,embeddings.word_embeddings.weight=rans:row:1023,*.weight=rans:64:31,"
         "*=f16")
# The shapes from bert-tiny to bert-base that test_every_shape_from_bert_tiny_to_bert_base runs.
SHAPES = ((2, 2, 128, 512), (4, 8, 512, 2048), (8, 8, 512, 2048), (12, 12, 768, 3072))


@requires_input(CLI, "build it with scripts/build.sh native", executable=True)
class CliParityTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="attn_cli_parity_")
        self.addCleanup(shutil.rmtree, self.tmp)

    def check(self, model, label, plans=PLANS):
        for plan in plans:
            path = os.path.join(self.tmp, "model.attn")
            modelfile.write(path, model, modelfile.parse_plan(plan) if plan else None)
            decoded = modelfile.read(path)
            result = subprocess.run([CLI, "analyze", "--model", path, "--json", SENTENCE],
                                    capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 0, result.stderr)
            out = json.loads(result.stdout)
            ids = [token["id"] for token in out["tokens"]]
            weights = {k: torch.from_numpy(v) for k, v in decoded.tensors.items()}
            _, attention = reference_bert.forward(dict(decoded.config.__dict__), weights, ids)
            got = np.array(out["attention"])
            self.assertEqual(got.shape, attention.shape)
            diff = np.abs(got - attention).max()
            want_rollout = reference_bert.rollout(attention)
            rollout_diff = np.abs(np.array(out["rollout"]) - want_rollout).max()
            print(f"\n  {label} {plan or 'f32'}: C++ vs reference attention max |diff| {diff:.2e},"
                  f" rollout {rollout_diff:.2e}", end="")
            self.assertLessEqual(diff, ATTENTION_TOLERANCE)
            self.assertLessEqual(rollout_diff, ATTENTION_TOLERANCE)

    def test_tiny_in_every_precision(self):
        self.check(small_model(seed=50), "tiny")

    def test_mini_shape_in_every_precision(self):
        self.check(make_random_model.make_model("mini", 51, {}), "mini")

    def test_every_shape_from_bert_tiny_to_bert_base(self):
        # bert-tiny's, bert-small's, bert-medium's and bert-base's (layers, heads, hidden,
        # intermediate), with the real vocabulary and 512 positions; in f32.
        for seed, (layers, heads, hidden, intermediate) in enumerate(SHAPES, start=60):
            with self.subTest(layers=layers, heads=heads, hidden=hidden):
                model = make_random_model.make_model(
                    "mini", seed, {"num_hidden_layers": layers, "num_attention_heads": heads,
                                   "hidden_size": hidden, "intermediate_size": intermediate},
                    with_pooler=False, with_mlm_head=False)
                self.check(model, f"{layers} x {heads}, hidden {hidden}", plans=(None,))


@requires_input(CLI, "build it with scripts/build.sh native", executable=True)
class CliAblationTest(unittest.TestCase):
    """`analyze --ablate L.H,... --hidden` against the reference with the same heads removed
    (Hugging Face head_mask semantics), for one head, a whole layer and every head."""

    def test_a_cased_checkpoint(self):
        """A cased model (do_lower_case false, a cased vocabulary made by helpers.cased_vocabulary):
        the engine's token ids are the independent Python tokenizer's with the same settings, and
        its attention the reference's on those ids."""
        base = small_model(seed=5)
        lines = cased_vocabulary(base.vocab_entries())
        config = dataclasses.replace(base.config, vocab_size=len(lines))
        tensors = make_random_model.random_tensors(config, np.random.default_rng(5))
        cased = modelfile.TokenizerSettings(do_lower_case=False)
        model = modelfile.Model(config, "random cased", base.provenance, ("\n".join(lines) + "\n").encode(),
                                tensors, tokenizer=cased)
        tmp = tempfile.mkdtemp(prefix="attn_cased_")
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "cased.attn")
        modelfile.write(path, model)
        text = "Hello WORLD: Café in São Paulo, Cafe\u0301 again (naïve Ångström) \u1112\u1161\u11ab"
        result = subprocess.run([CLI, "analyze", "--model", path, "--json", text],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout)
        ids = [token["id"] for token in out["tokens"]]
        reference_ids = BertReference(lines, do_lower_case=False).encode(text)
        self.assertEqual(ids, reference_ids)
        self.assertNotEqual(ids, BertReference(lines).encode(text), "the cased ids are the uncased ones")
        self.assertEqual(sum(1 for t in out["tokens"] if t["text"] == "Café"), 2)
        weights = {k: torch.from_numpy(v) for k, v in modelfile.read(path).tensors.items()}
        _, attention = reference_bert.forward(dict(config.__dict__), weights, ids)
        diff = np.abs(np.array(out["attention"]) - attention).max()
        print(f"\n  cased ({len(lines)} entries, {len(ids)} tokens): C++ vs reference attention max |diff| {diff:.2e}", end="")
        self.assertLessEqual(diff, ATTENTION_TOLERANCE)

    def test_removed_heads_match_the_reference(self):
        tmp = tempfile.mkdtemp(prefix="attn_cli_ablate_")
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "model.attn")
        model = make_random_model.make_model("mini", 54, {})
        modelfile.write(path, model)
        decoded = modelfile.read(path)
        config = dict(decoded.config.__dict__)
        layers, heads = config["num_hidden_layers"], config["num_attention_heads"]
        weights = {k: torch.from_numpy(v) for k, v in decoded.tensors.items()}
        cases = {"2.3": reference_bert.parse_heads("2.3", layers, heads),
                 "1.1,1.2,1.3,1.4": reference_bert.parse_heads("1.*", layers, heads),
                 ",".join(f"{l}.{h}" for l in range(1, layers + 1) for h in range(1, heads + 1)):
                     reference_bert.parse_heads("all", layers, heads)}
        for spec, removed in cases.items():
            result = subprocess.run([CLI, "analyze", "--model", path, "--json", "--hidden",
                                     "--ablate", spec, SENTENCE],
                                    capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 0, result.stderr)
            out = json.loads(result.stdout)
            ids = [token["id"] for token in out["tokens"]]
            hidden, attention = reference_bert.forward(config, weights, ids, removed=removed)
            attention_diff = np.abs(np.array(out["attention"]) - attention).max()
            hidden_diff = np.abs(np.array(out["hidden"]) - hidden[-1]).max()
            print(f"\n  --ablate {spec[:20]}: attention max |diff| {attention_diff:.2e}, "
                  f"last hidden {hidden_diff:.2e}", end="")
            self.assertLessEqual(attention_diff, ATTENTION_TOLERANCE)
            self.assertLessEqual(hidden_diff, HIDDEN_TOLERANCE)
            want = [{"layer": l, "head": h} for l in range(layers) for h in range(heads)
                    if removed[l][h]]
            self.assertEqual(out["removed_heads"], want)

    def test_a_bad_head_list_names_the_form_and_the_range(self):
        for spec in ("0.1", "5.1", "2.9", "2", "x.y", "2.3,"):
            result = subprocess.run([CLI, "analyze", "--model", MODEL, "--json", "--ablate", spec,
                                     "The cat sat."], capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 2, spec)
            self.assertIn("L.H[,L.H...] with L in 1..4 and H in 1..4", result.stderr)


@requires_input(CLI, "build it with scripts/build.sh native", executable=True)
class CliInfoTest(unittest.TestCase):
    """`attention-cli info --json` against the Python reader (scripts/model/modelfile.py) on the
    same file."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="attn_cli_info_")
        self.addCleanup(shutil.rmtree, self.tmp)

    def info(self, path):
        result = subprocess.run([CLI, "info", "--model", path, "--json"], capture_output=True,
                                text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)

    def test_every_tensor_as_the_python_reader_sees_it(self):
        path = os.path.join(self.tmp, "model.attn")
        modelfile.write(path, small_model(seed=52), modelfile.parse_plan(PLANS[3]))
        model = modelfile.read(path)
        out = self.info(path)
        self.assertEqual(out["name"], model.name)
        self.assertEqual(out["provenance"], model.provenance)
        self.assertEqual(out["file_bytes"], os.path.getsize(path))
        self.assertEqual(out["config"]["hidden_size"], model.config.hidden_size)
        self.assertEqual(out["config"]["num_hidden_layers"], model.config.num_hidden_layers)
        self.assertEqual(out["parameters"], sum(v.size for v in model.tensors.values()))
        self.assertEqual([t["name"] for t in out["tensors"]], list(model.tensors))
        dtypes = set()
        for t in out["tensors"]:
            stored = model.precision[t["name"]]
            self.assertEqual(t["dtype"], stored[0], t["name"])
            self.assertEqual(t["shape"], list(model.tensors[t["name"]].shape), t["name"])
            self.assertEqual(t["group_size"], stored[1], t["name"])
            self.assertGreater(t["bytes"], 0)
            dtypes.add(t["dtype"])
        self.assertEqual(dtypes, {"f32", "f16", "rans"})  # the plan mixes three dtypes
        self.assertEqual(out["precision"], "f32+f16+rans")

    def test_a_file_the_engine_refuses_is_refused_by_info_too(self):
        # The file's own checks pass (a valid CRC), but its vocabulary's first entry starts with a
        # carriage return, which the tokenizer refuses: info must not print it as a good file.
        model = small_model(seed=55)
        model.vocab = b"\r" + model.vocab
        path = os.path.join(self.tmp, "model.attn")
        modelfile.write(path, model)
        analyze = subprocess.run([CLI, "analyze", "--model", path, "--json", "a"], capture_output=True,
                                 text=True, timeout=60)
        info = subprocess.run([CLI, "info", "--model", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(analyze.returncode, 1, analyze.stderr)
        self.assertEqual(info.returncode, 1, info.stdout)
        self.assertEqual(info.stderr.split(": ", 1)[1], analyze.stderr.split(": ", 1)[1])
        self.assertIn("carriage return", info.stderr)

    def test_a_broken_file_is_refused_with_the_loaders_message(self):
        path = os.path.join(self.tmp, "model.attn")
        modelfile.write(path, small_model(seed=53))
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 7)
        result = subprocess.run([CLI, "info", "--model", path], capture_output=True, text=True,
                                timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertIn("attention-cli info:", result.stderr)
        self.assertIn("truncated", result.stderr.lower())
        result = subprocess.run([CLI, "info"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 2)
        self.assertIn("--model FILE is missing", result.stderr)


if __name__ == "__main__":
    unittest.main()
