"""Checks of the reference forward pass (scripts/reference/reference_bert.py) itself: against
torch's own nn.MultiheadAttention / F.layer_norm / F.gelu formulation, and rollout by hand-worked
cases."""

import unittest

import numpy as np
import torch
import torch.nn.functional as F

from helpers import small_model
from scripts.reference import reference_bert

# Both sides run in float64; what is left is summation order.
TOLERANCE = 1e-12


def torch_modules_forward(model, ids):
    """BERT assembled from torch.nn building blocks in float64.
    Returns (hidden (L+1, n, d), attention probs (L, H, n, n))."""
    c = model.config
    w = {k: torch.from_numpy(v).double() for k, v in model.tensors.items()}
    ids = torch.tensor(ids)
    n = len(ids)
    x = (F.embedding(ids, w["embeddings.word_embeddings.weight"])
         + F.embedding(torch.arange(n), w["embeddings.position_embeddings.weight"])
         + F.embedding(torch.zeros(n, dtype=torch.long),
                       w["embeddings.token_type_embeddings.weight"]))
    x = F.layer_norm(x, (c.hidden_size,), w["embeddings.LayerNorm.weight"],
                     w["embeddings.LayerNorm.bias"], c.layer_norm_eps)
    hidden, probs = [x], []
    for layer in range(c.num_hidden_layers):
        p = f"encoder.layer.{layer}."
        mha = torch.nn.MultiheadAttention(c.hidden_size, c.num_attention_heads, batch_first=True,
                                          dtype=torch.float64)
        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.cat([w[p + f"attention.self.{m}.weight"]
                                                for m in ("query", "key", "value")]))
            mha.in_proj_bias.copy_(torch.cat([w[p + f"attention.self.{m}.bias"]
                                              for m in ("query", "key", "value")]))
            mha.out_proj.weight.copy_(w[p + "attention.output.dense.weight"])
            mha.out_proj.bias.copy_(w[p + "attention.output.dense.bias"])
            mha.eval()
            attended, weights = mha(x[None], x[None], x[None], need_weights=True,
                                    average_attn_weights=False)
        x = F.layer_norm(x + attended[0], (c.hidden_size,),
                         w[p + "attention.output.LayerNorm.weight"],
                         w[p + "attention.output.LayerNorm.bias"], c.layer_norm_eps)
        ff = F.linear(F.gelu(F.linear(x, w[p + "intermediate.dense.weight"],
                                      w[p + "intermediate.dense.bias"])),
                      w[p + "output.dense.weight"], w[p + "output.dense.bias"])
        x = F.layer_norm(x + ff, (c.hidden_size,), w[p + "output.LayerNorm.weight"],
                         w[p + "output.LayerNorm.bias"], c.layer_norm_eps)
        hidden.append(x)
        probs.append(weights[0])
    return torch.stack(hidden).detach().numpy(), torch.stack(probs).detach().numpy()


class ReferenceForwardTest(unittest.TestCase):
    def test_matches_torch_nn_building_blocks(self):
        model = small_model(seed=8)
        weights = {k: torch.from_numpy(v) for k, v in model.tensors.items()}
        config = dict(model.config.__dict__)
        for n, seed in ((2, 0), (7, 1), (40, 2)):
            ids = reference_bert.random_ids(n, model.config.vocab_size,
                                            np.random.default_rng(seed))
            hidden, attention = reference_bert.forward(config, weights, ids)
            want_hidden, want_attention = torch_modules_forward(model, ids)
            self.assertEqual(attention.shape, (2, 4, n, n))
            self.assertEqual(hidden.shape, (3, n, 32))
            attention_diff = np.abs(attention - want_attention).max()
            hidden_diff = np.abs(hidden - want_hidden).max()
            print(f"\n  n={n}: reference vs torch.nn: attention max |diff| {attention_diff:.2e}, "
                  f"hidden {hidden_diff:.2e}", end="")
            self.assertLess(attention_diff, TOLERANCE)
            self.assertLess(hidden_diff, TOLERANCE)
            np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-12)

    def test_random_model_attention_is_peaky(self):
        # Parity is only a strong test if some heads put most of a row on one token.
        model = small_model(seed=1)
        weights = {k: torch.from_numpy(v) for k, v in model.tensors.items()}
        ids = reference_bert.random_ids(32, model.config.vocab_size, np.random.default_rng(0))
        _, attention = reference_bert.forward(dict(model.config.__dict__), weights, ids)
        row_max = attention.max(-1)  # (L, H, n)
        self.assertGreaterEqual((row_max > 0.5).mean(-1).max(), 0.25)
        self.assertLess(row_max.mean(-1).min(), 0.3)  # and some heads stay broad


class RolloutTest(unittest.TestCase):
    def test_one_layer_by_hand(self):
        attention = np.array([[[[1.0, 0.0], [0.5, 0.5]],
                               [[0.0, 1.0], [0.5, 0.5]]]])  # (1, 2, 2, 2)
        # Head mean [[.5,.5],[.5,.5]]; 0.5 I + 0.5 mean = [[.75,.25],[.25,.75]].
        np.testing.assert_allclose(reference_bert.rollout(attention),
                                   [[0.75, 0.25], [0.25, 0.75]])

    def test_later_layers_multiply_on_the_left(self):
        first = np.array([[1.0, 0.0], [1.0, 0.0]])   # layer 0: everyone reads token 0
        second = np.array([[0.0, 1.0], [0.0, 1.0]])  # layer 1: everyone reads token 1
        attention = np.stack([first[None], second[None]])  # (2, 1, 2, 2)
        a0 = 0.5 * np.eye(2) + 0.5 * first    # [[1, 0], [.5, .5]]
        a1 = 0.5 * np.eye(2) + 0.5 * second   # [[.5, .5], [0, 1]]
        # a1 @ a0 = [[.75, .25], [.5, .5]]; the other order would give [[.5, .5], [.25, .75]].
        np.testing.assert_allclose(reference_bert.rollout(attention), [[0.75, 0.25], [0.5, 0.5]])
        np.testing.assert_allclose(reference_bert.rollout(attention), a1 @ a0)

    def test_residual_weight_is_a_parameter(self):
        attention = np.array([[[[0.2, 0.8], [0.6, 0.4]]]])
        np.testing.assert_allclose(reference_bert.rollout(attention, residual=0.0),
                                   attention[0, 0])
        np.testing.assert_allclose(reference_bert.rollout(attention, residual=1.0), np.eye(2))


if __name__ == "__main__":
    unittest.main()
