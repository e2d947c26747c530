"""`attention-cli lenses` against the independent float64 reference of the lenses
(scripts/reference/lenses_reference.py, written from the definitions, not from wasm/core/lenses.*),
and the reference's own invariants.

LensesParityTest runs the CLI on random checkpoints of three shapes and on the shipped model
(model_data/explainer-mini.compact.attn), each on one sentence with `--target POS` and with
`--mask POS --target POS`, and compares every key of the JSON; it prints the largest difference
per key. It needs the native build (scripts/build.sh native) and fails without it
(ATTN_ALLOW_SKIP=1 skips); set ATTN_CLI to use another binary. ReferenceInvariantsTest needs no
CLI: the mixing vectors rebuild the first LayerNorm's output, ALTI and value-zeroing rows sum to
1, the max-flow agrees with a hand case and with a brute-force minimum cut, a token nobody attends
to gets no value-zeroing score, and the rank correlation's ties.
"""

import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

from bert_reference import BertReference
from helpers import ROOT, requires_input, small_model
from scripts.model import modelfile
from scripts.reference import lenses_reference, make_random_model

CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
MODEL = os.path.join(ROOT, "model_data", "explainer-mini.compact.attn")
# 12 tokens, every word one vocabulary entry: [CLS] the quick brown fox ... dog . [SEP]
SENTENCE = "The quick brown fox jumps over the lazy dog."
POSITION = 4  # "fox"
SHORT_SENTENCE = "A cat sat on the mat and then it slept."
SHORT_POSITION = 2  # "cat"

# The float32 engine against the float64 reference.
LENS_TOLERANCE = 1e-5       # weighted ... value_zeroing (the lens matrices)
OCCLUSION_TOLERANCE = 1e-4  # occlusion and target_logprob (log-probabilities)
RHO_TOLERANCE = 1e-3        # faithfulness (Spearman rho)
MATRIX_KEYS = ("weighted", "weighted_layer", "mixing", "mixing_ratio", "alti", "alti_rollout",
               "rollout", "flow", "flow_normalized", "value_zeroing")
TOLERANCE = dict({k: LENS_TOLERANCE for k in MATRIX_KEYS}, occlusion=OCCLUSION_TOLERANCE,
                 target_logprob=OCCLUSION_TOLERANCE, faithfulness=RHO_TOLERANCE)
EXPECTED_KEYS = {"ids", "tokens", *MATRIX_KEYS}
INFO_KEYS = {"model", "truncated"}  # what the model is, and whether the text was cut
TARGET_KEYS = {"target", "target_top1", "target_logprob", "occlusion", "faithfulness"}
MASK_ID = 103


def as_array(value):
    """A nested JSON list with nulls as a float64 array with NaN in their place (a null row of a
    matrix becomes a NaN row)."""
    if value is None:
        return None
    if isinstance(value, list):
        if any(v is None for v in value) and any(isinstance(v, list) for v in value):
            width = len(next(v for v in value if isinstance(v, list)))
            value = [[None] * width if v is None else v for v in value]
        return np.array([as_array(v) if isinstance(v, list) else
                         (np.nan if v is None else v) for v in value], dtype=np.float64)
    return float(value)


def run_cli(args, timeout=120):
    result = subprocess.run([CLI, "lenses", *args], capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"attention-cli lenses {' '.join(args)}: exit "
                             f"{result.returncode}: {result.stderr}")
    return json.loads(result.stdout)


@requires_input(CLI, "build it with scripts/build.sh native", executable=True)
class LensesParityTest(unittest.TestCase):
    maxima = {}  # key -> (largest |diff| over the cases, the case)

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="attn_lenses_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        for key, (diff, case) in sorted(cls.maxima.items()):
            print(f"lenses parity: {key} max|diff| = {diff:.1e} (tol {TOLERANCE[key]:.0e}; "
                  f"largest in {case})", file=sys.stderr)

    def note(self, case, key, diff):
        print(f"  {case}: {key} max|diff| = {diff:.1e} (tol {TOLERANCE[key]:.0e})",
              file=sys.stderr)
        if diff > self.maxima.get(key, (-1.0, ""))[0]:
            self.maxima[key] = (diff, case)

    def compare_array(self, case, key, got, want):
        got, want = as_array(got), np.asarray(want, dtype=np.float64)
        self.assertEqual(got.shape, want.shape, f"{case}: {key} shape")
        self.assertTrue(np.array_equal(np.isnan(got), np.isnan(want)),
                        f"{case}: {key}: null at {np.argwhere(np.isnan(got)).tolist()}, the "
                        f"reference at {np.argwhere(np.isnan(want)).tolist()}")
        finite = ~np.isnan(want)
        diff = float(np.abs(got[finite] - want[finite]).max()) if finite.any() else 0.0
        self.note(case, key, diff)
        self.assertLessEqual(diff, TOLERANCE[key], f"{case}: {key} max|diff| {diff:.3e} at "
                             f"{np.unravel_index(np.nanargmax(np.abs(got - want)), got.shape)}")

    def check_case(self, case, path, text, position, mask):
        model = modelfile.read(path)
        config = dict(model.config.__dict__)
        args = ["--model", path, "--target", str(position)]
        if mask:
            args += ["--mask", str(position)]
        out = run_cli(args + ["--json", text])
        case = f"{case} {'--mask --target' if mask else '--target'}"
        self.assertEqual(set(out) - INFO_KEYS, EXPECTED_KEYS | TARGET_KEYS, case)
        self.assertIs(out["truncated"], False, case)
        self.assertEqual((out["model"]["layers"], out["model"]["heads"], out["model"]["hidden"]),
                         (config["num_hidden_layers"], config["num_attention_heads"],
                          config["hidden_size"]), case)

        lines = model.vocab_entries()
        ids = BertReference(lines).encode(text)
        # tokens are the text's pieces; a --mask'ed position keeps its word there (its id is
        # [MASK]'s)
        self.assertEqual(out["tokens"], [lines[i] for i in ids], case)
        if mask:
            ids[position] = MASK_ID
        self.assertEqual(out["ids"], ids, case)
        want = lenses_reference.lenses(config, model.tensors, ids, target=position)
        for key in MATRIX_KEYS:
            self.compare_array(case, key, out[key], want[key])

        self.assertEqual(out["target"], position, case)
        self.assertEqual(out["target_top1"], want["target_top1"], case)
        diff = abs(out["target_logprob"] - want["target_logprob"])
        self.note(case, "target_logprob", diff)
        self.assertLessEqual(diff, OCCLUSION_TOLERANCE, case)
        self.compare_array(case, "occlusion", out["occlusion"], want["occlusion"])

        self.assertEqual(set(out["faithfulness"]), set(lenses_reference.FAITHFULNESS_KEYS), case)
        worst = 0.0
        for key, rho in want["faithfulness"].items():
            got = out["faithfulness"][key]
            self.assertEqual(got is None, rho is None, f"{case}: faithfulness {key}: {got} vs {rho}")
            if rho is not None:
                worst = max(worst, abs(got - rho))
                self.assertLessEqual(abs(got - rho), RHO_TOLERANCE,
                                     f"{case}: faithfulness {key}: {got} vs {rho}")
        self.note(case, "faithfulness", worst)
        return out

    def check_model(self, label, model, text=SENTENCE, position=POSITION):
        path = os.path.join(self.tmp, f"{label}.attn")
        if model is not None:
            modelfile.write(path, model)
        else:
            path = MODEL
        for mask in (False, True):
            with self.subTest(mask=mask):
                self.check_case(label, path, text, position, mask)

    def test_random_tiny_two_layers(self):
        self.check_model("tiny L2 H4", small_model(seed=70))

    def test_random_tiny_three_layers_two_heads(self):
        self.check_model("tiny L3 H2", make_random_model.make_model(
            "tiny", 71, {"num_hidden_layers": 3, "num_attention_heads": 2},
            with_pooler=False, with_mlm_head=True))

    def test_random_mini_two_layers_eight_heads(self):
        self.check_model("mini L2 H8", make_random_model.make_model(
            "mini", 72, {"num_hidden_layers": 2, "num_attention_heads": 8},
            with_pooler=True, with_mlm_head=True))

    def test_shipped_model(self):
        self.check_model("explainer-mini", None, SHORT_SENTENCE, SHORT_POSITION)

    def test_flow_rows_one_row(self):
        full = run_cli(["--model", MODEL, "--json", SHORT_SENTENCE])
        one = run_cli(["--model", MODEL, "--flow-rows", str(SHORT_POSITION), "--json",
                       SHORT_SENTENCE])
        n = len(full["ids"])
        self.assertEqual(one["ids"], full["ids"])
        self.assertFalse(TARGET_KEYS & set(one), "no --target, no target keys")
        for key in ("flow", "flow_normalized"):
            self.assertEqual(len(one[key]), n)
            for i, row in enumerate(one[key]):
                if i == SHORT_POSITION:
                    self.assertEqual(row, full[key][i], key)
                    self.assertTrue(all(v is not None for v in row), key)
                else:
                    self.assertIsNone(row, f"{key} row {i}")
            self.assertTrue(all(v is not None for row in full[key] for v in row), key)
        model = modelfile.read(MODEL)
        want = lenses_reference.lenses(dict(model.config.__dict__), model.tensors, full["ids"],
                                       flow_rows=[SHORT_POSITION])
        for key in ("flow", "flow_normalized"):
            self.compare_array("explainer-mini --flow-rows", key, one[key], want[key])


def _random_case(seed=80, layers=2, ids=(101, 1996, 4248, 2829, 4419, 1012, 102)):
    model = small_model(seed=seed, layers=layers)
    return (dict(model.config.__dict__), model.tensors, list(ids),
            lenses_reference.lenses(dict(model.config.__dict__), model.tensors, list(ids)))


def _min_cut(matrices, i, j):
    """The smallest cut between (0, j) and (L, i), by trying every side for the nodes of layers
    1..L-1 (the other layer-0 nodes sit on the sink side and the other layer-L nodes on the
    source side, where their arcs cost nothing)."""
    layers, n = len(matrices), matrices[0].shape[0]
    middle = [(l, k) for l in range(1, layers) for k in range(n)]
    best = math.inf
    for sides in itertools.product((0, 1), repeat=len(middle)):
        source_side = {(0, j)} | {(layers, k) for k in range(n) if k != i}
        source_side |= {node for node, side in zip(middle, sides) if side}
        cut = 0.0
        for l in range(1, layers + 1):
            for a in range(n):          # (l-1, a) -> (l, b), capacity M_{l-1}[b][a]
                for b in range(n):
                    if (l - 1, a) in source_side and (l, b) not in source_side:
                        cut += matrices[l - 1][b, a]
        best = min(best, cut)
    return best


class ReferenceInvariantsTest(unittest.TestCase):
    def test_mixing_vectors_rebuild_the_first_layer_norm(self):
        from scripts.reference import reference_bert
        config, tensors, _, out = _random_case()
        w = lenses_reference._weights64(tensors)
        for layer, parts in enumerate(out["parts"]):
            rebuilt = parts["T"].sum(dim=1) + parts["bias_term"] + parts["beta"]
            self.assertLess(float((rebuilt - parts["z"]).abs().max()), 1e-10, layer)
            # z is the layer's first LayerNorm output as reference_bert computes it
            p = f"encoder.layer.{layer}."
            x = torch.from_numpy(out["hidden"][layer])
            context, _ = reference_bert.self_attention(x, w, p + "attention.",
                                                       config["num_attention_heads"])
            attended = reference_bert.linear(context, w[p + "attention.output.dense.weight"],
                                             w[p + "attention.output.dense.bias"])
            z = reference_bert.layer_norm(attended + x, w[p + "attention.output.LayerNorm.weight"],
                                          w[p + "attention.output.LayerNorm.bias"],
                                          config["layer_norm_eps"])
            self.assertLess(float((z - parts["z"]).abs().max()), 1e-12, layer)
        self.assertEqual(out["mixing"].shape, (2, 7, 7))

    def test_rows_sum_to_one(self):
        _, _, _, out = _random_case(seed=81, layers=3)
        for key in ("alti", "value_zeroing"):
            np.testing.assert_allclose(out[key].sum(axis=-1), 1.0, atol=1e-12, err_msg=key)
        for key in ("alti_rollout", "rollout", "flow_normalized"):
            np.testing.assert_allclose(out[key].sum(axis=-1), 1.0, atol=1e-12, err_msg=key)
        self.assertTrue((out["alti"] >= 0).all() and (out["value_zeroing"] >= 0).all())
        ratio = out["mixing"].sum(-1) - np.diagonal(out["mixing"], axis1=1, axis2=2)
        np.testing.assert_allclose(out["mixing_ratio"], ratio / out["mixing"].sum(-1), atol=1e-15)

    def test_flow_on_a_hand_case(self):
        # 3 tokens, 2 layers: every path is (0, j) -> (1, k) -> (2, i), so the flow is
        # sum_k min(M0[k][j], M1[i][k]).
        m0 = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.25, 0.25, 0.5]])
        m1 = np.array([[0.7, 0.2, 0.1], [0.3, 0.4, 0.3], [0.0, 0.5, 0.5]])
        flow = lenses_reference.attention_flow([m0, m1])
        self.assertAlmostEqual(flow[0, 0], 0.5 + 0.1 + 0.1, places=14)
        self.assertAlmostEqual(flow[2, 1], 0.0 + 0.5 + 0.25, places=14)
        for i in range(3):
            for j in range(3):
                want = sum(min(m0[k, j], m1[i, k]) for k in range(3))
                self.assertAlmostEqual(flow[i, j], want, places=14, msg=(i, j))
        rows = lenses_reference.attention_flow([m0, m1], rows=[1])
        self.assertTrue(np.isnan(rows[[0, 2]]).all())
        np.testing.assert_array_equal(rows[1], flow[1])

    def test_flow_is_the_minimum_cut(self):
        rng = np.random.default_rng(5)
        for layers, n in ((3, 3), (3, 4), (4, 3)):
            matrices = []
            for _ in range(layers):
                alpha = rng.dirichlet(np.full(n, 0.7), size=(2, n))
                matrices.extend(lenses_reference.rollout_matrices([alpha]))
            flow = lenses_reference.attention_flow(matrices)
            for i in range(n):
                for j in range(n):
                    self.assertAlmostEqual(flow[i, j], _min_cut(matrices, i, j), places=12,
                                           msg=(layers, n, i, j))

    def test_value_zeroing_of_a_token_nobody_attends_to(self):
        model = small_model(seed=82)
        w = lenses_reference._weights64(model.tensors)
        eps = model.config.layer_norm_eps
        x = lenses_reference.embed(w, [101, 1996, 4248, 2829, 4419, 102], eps)
        p = "encoder.layer.0."
        alpha, v = lenses_reference.attention_probs(x, w, p, model.config.num_attention_heads)
        alpha = alpha.clone()
        alpha[:, :, 3] = 0.0
        alpha /= alpha.sum(dim=-1, keepdim=True)
        scores = lenses_reference.value_zeroing_from(x, alpha, v, w, p, eps).numpy()
        self.assertLess(np.abs(scores[:, 3]).max(), 1e-10)
        np.testing.assert_allclose(scores.sum(axis=1), 1.0, atol=1e-12)
        self.assertGreater(scores[:, [0, 1, 2, 4, 5]].min(), 0.0)

    def test_the_layer_loop_is_the_bert_forward_pass(self):
        from scripts.reference import reference_bert
        config, tensors, ids, out = _random_case(seed=83, layers=3)
        weights = {k: torch.from_numpy(v) for k, v in tensors.items()}
        hidden, attention = reference_bert.forward(config, weights, ids)
        np.testing.assert_allclose(out["hidden"], hidden, atol=1e-12)
        np.testing.assert_allclose(out["attention"], attention, atol=1e-14)
        np.testing.assert_allclose(out["rollout"], reference_bert.rollout(attention), atol=1e-14)

    def test_spearman_ties_and_nulls(self):
        rho = lenses_reference.spearman
        self.assertAlmostEqual(rho([1, 2, 3, 4], [10, 20, 30, 40]), 1.0)
        self.assertAlmostEqual(rho([1, 2, 3, 4], [4, 3, 2, 1]), -1.0)
        self.assertIsNone(rho([1, 2], [1, 2]))
        self.assertIsNone(rho([1, 2, 3], [5, 5, 5]))
        # 0.5, 0.5 + 5e-10 and 0.5 + 1e-9 chain into one group (rank 3 each)
        np.testing.assert_allclose(lenses_reference.tie_ranks([0.5 + 1e-9, 0.1, 0.5, 0.5 + 5e-10, 2]),
                                   [3, 1, 3, 3, 5])
        np.testing.assert_allclose(lenses_reference.tie_ranks([0.0, 2e-9, 1.0]), [1, 2, 3])
        # ranks (1, 2.5, 2.5, 4) against (1, 2, 3, 4)
        a = np.array([1, 2.5, 2.5, 4]) - 2.5
        b = np.array([1, 2, 3, 4]) - 2.5
        self.assertAlmostEqual(rho([1, 7, 7, 9], [1, 2, 3, 4]),
                               (a * b).sum() / math.sqrt((a * a).sum() * (b * b).sum()))

    def test_occlusion_is_null_at_the_target_and_the_specials(self):
        model = small_model(seed=84)
        ids = [101, 1996, 4248, MASK_ID, 4419, 102]
        out = lenses_reference.lenses(dict(model.config.__dict__), model.tensors, ids, target=3)
        self.assertEqual(np.isnan(out["occlusion"]).tolist(), [True, False, False, True, False, True])
        config = dict(model.config.__dict__)
        w = lenses_reference._weights64(model.tensors)
        h = lenses_reference.encoder(w, ids, config["num_attention_heads"],
                                     config["num_hidden_layers"], config["layer_norm_eps"])
        log_probs = lenses_reference.mlm_log_probs(w, h[3], config["layer_norm_eps"])
        self.assertEqual(out["target_top1"], int(np.argmax(log_probs.numpy())))
        self.assertAlmostEqual(float(torch.logsumexp(log_probs, 0)), 0.0, places=12)


if __name__ == "__main__":
    unittest.main()
