"""The C++ engine (attention-cli) on files written by scripts/modelfile.py in every precision,
against the reference run on the weights as the Python reader decodes them. This checks that the
two readers agree on the f16, int8 and rans encodings; the f32 parity on many lengths is the C++
parity test's job (tests/cpp, fixtures from scripts/make_test_fixtures.sh).

Needs the native build (scripts/build.sh native); set ATTN_CLI to use another binary."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import torch

from helpers import ROOT, small_model
import make_random_model
import modelfile
import reference_bert

CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
# The fp32 attention bar of DESIGN.md: float32 engine against the float64 reference.
ATTENTION_TOLERANCE = 1e-5
SENTENCE = "The quick brown fox jumps over the lazy dog, and then it naps."
PLANS = (None,
         "*.weight=int8:row,*LayerNorm*=f16,*=f32",
         "embeddings.word_embeddings.weight=int8:tensor,*.weight=int8:16,*=f16",
         "*LayerNorm*=f32,embeddings.word_embeddings.weight=rans:row:1023,*.weight=rans:64:31,"
         "*=f16")


@unittest.skipUnless(os.access(CLI, os.X_OK), f"{CLI} is not built (scripts/build.sh native)")
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


if __name__ == "__main__":
    unittest.main()
