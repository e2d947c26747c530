"""The C++ engine (attention-cli) on files written by scripts/model/modelfile.py in every
precision, against the reference run on the weights as the Python reader decodes them. This checks
that the two readers agree on the f16, int8 and rans encodings; the f32 parity on many lengths is
the C++ parity test's job (tests/cpp, fixtures from scripts/reference/make_test_fixtures.sh).

Needs the native build (scripts/build.sh native) and fails without it (ATTN_ALLOW_SKIP=1 skips);
set ATTN_CLI to use another binary."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import torch

from helpers import ROOT, requires_input, small_model
from scripts.model import modelfile
from scripts.reference import make_random_model, reference_bert

CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
# The fp32 attention bar (docs/ARCHITECTURE.md, "Fidelity bars"): float32 engine against the
# float64 reference.
ATTENTION_TOLERANCE = 1e-5
SENTENCE = "The quick brown fox jumps over the lazy dog, and then it naps."
PLANS = (None,
         "*.weight=int8:row,*LayerNorm*=f16,*=f32",
         "embeddings.word_embeddings.weight=int8:tensor,*.weight=int8:16,*=f16",
         "*LayerNorm*=f32,embeddings.word_embeddings.weight=rans:row:1023,*.weight=rans:64:31,"
         "*=f16")


@requires_input(CLI, "build it with scripts/build.sh native", executable=True)
class CliParityTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="attn_cli_parity_")
        self.addCleanup(shutil.rmtree, self.tmp)

    def check(self, model, label):
        for plan in PLANS:
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
            diff = np.abs(np.array(out["attention"]) - attention).max()
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
