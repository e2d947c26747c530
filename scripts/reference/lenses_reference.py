"""An independent float64 reference of the attention lenses, for tests/py/test_lenses.py.

Written from the definitions below (the lead's brief), not from the C++ (wasm/core/lenses.*),
so the parity test checks the engine against a second reading of the same definitions. It reuses
only the small torch helpers of scripts/reference/reference_bert.py (layer_norm, gelu, linear,
softmax_rows); the layer loop, the lenses, the masked-LM head, the max-flow and the rank
correlation are written here.

    from scripts.reference import lenses_reference
    out = lenses_reference.lenses(config, weights, ids, target=5, flow_rows=None)

config: dict with num_hidden_layers, num_attention_heads, hidden_size, layer_norm_eps; weights:
Hugging Face BertForMaskedLM-style names (without `bert.`) -> arrays or tensors, as
scripts.model.modelfile.read decodes them; ids: token ids (already masked). Returns a dict of
numpy float64 arrays (None where an entry is null; rows of flow not asked for are NaN rows and
listed in "flow_rows").

Papers:
  Kobayashi, Kuribayashi, Yokoi, Inui 2020, "Attention is Not Only a Weight: Analyzing
    Transformers with Vector Norms" (weighted: ||alpha f(x)||);
  Kobayashi, Kuribayashi, Yokoi, Inui 2021, "Incorporating Residual and Normalization Layers into
    Analysis of Masked Language Models" (mixing: attention + residual + first LayerNorm);
  Ferrando, Gallego, Costa-jussa 2022, "Measuring the Mixing of Contextual Information in the
    Transformer" (ALTI);
  Abnar and Zuidema 2020, "Quantifying Attention Flow in Transformers" (rollout, attention flow);
  Mohebbi, Zuidema, Chrupala, Alishahi 2023, "Quantifying Context Mixing in Transformers"
    (value zeroing).

Definitions (0-based layers; row i = the token being updated, column j = the token it reads):
  x = the layer's input (n, d); head h uses hidden columns [h*dh, (h+1)*dh).
  f_h(x) = (x W_V^h + b_V^h) W_O^h (value bias in, output bias b_O out; W_O^h = the head's
  slice of W_O's input columns). alpha = softmax attention. y_i = x_i + sum_h sum_j
  alpha^h_ij f_h(x_j) + b_O is the first LayerNorm's input; s_i = sqrt(biased var(y_i) + eps).
  weighted[l][h][i][j]   = alpha^h_ij ||f_h(x_j)||_2
  weighted_layer[l][i][j] = ||sum_h alpha^h_ij f_h(x_j)||_2
  mixing[l][i][j]         = ||T_i(x_j)||_2, u_ij = sum_h alpha^h_ij f_h(x_j) + [i=j] x_i,
                            T_i(x_j) = gamma_1 * (u_ij - mean(u_ij)) / s_i
  mixing_ratio[l][i]      = sum_{j != i} mixing[l][i][j] / sum_j mixing[l][i][j]
  alti[l][i][j]           = c_ij / sum_j' c_ij', c_ij = max(0, ||z_i||_1 - ||z_i - T_i(x_j)||_1),
                            z_i = LN_1(y_i); an all-zero row stays zero
  alti_rollout            = alti[L-1] @ ... @ alti[0]
  rollout                 = M_{L-1} @ ... @ M_0, M_l = rows renormalised of 0.5 mean_h alpha_l + 0.5 I
  flow[i][j]              = max flow from node (0, j) to node (L, i) of the layered graph whose
                            edge (l-1, j') -> (l, i') has capacity M_{l-1}[i'][j']
  flow_normalized[i]      = flow[i] / sum_j flow[i][j]
  value_zeroing[l][i][j]  = the whole layer l rerun from x with token j's value row
                            (x_j W_V + b_V) zeroed in every head; cosine distance (clipped to
                            [0, 2]) between token i's original and altered outputs; rows
                            normalised to 1 (a zero row stays zero)
  With a target t: w* = argmax of the masked-LM logits at t (lowest id on ties), target_logprob
  = log softmax(logits_t)[w*], occlusion[j] = target_logprob - log p(w* at t | id j -> [MASK])
  for j != t whose id is not [CLS]/[SEP] (None elsewhere), faithfulness[k] = Spearman rho
  (average ranks; sorted values within 1e-9 of their neighbour chain into one tie group)
  between occlusion and row t of lens k over those j; None with fewer than 3 positions or a
  constant rank vector. Lenses: attention_last_mean (head mean of the last layer's alpha),
  rollout, flow (raw; row t is computed for this even when flow_rows leaves it out),
  alti_rollout, weighted_layer_last (weighted_layer[L-1]).

The masked-LM head: gelu(transform.dense) -> transform.LayerNorm -> word embeddings^T +
cls.predictions.bias (the decoder is tied to the word embeddings).
"""

import math
from collections import deque

import numpy as np
import torch

from scripts.reference.reference_bert import gelu, layer_norm, linear, softmax_rows

CLS_ID, SEP_ID, MASK_ID = 101, 102, 103
FLOW_EPS = 1e-14       # residual capacities at or below this are treated as saturated
TIE_EPS = 1e-9         # the rank-tie chaining threshold
FAITHFULNESS_KEYS = ("attention_last_mean", "rollout", "flow", "alti_rollout",
                     "weighted_layer_last")


def _weights64(weights):
    out = {}
    for k, v in weights.items():
        t = v if isinstance(v, torch.Tensor) else torch.from_numpy(np.asarray(v))
        out[k] = t.to(torch.float64)
    return out


def embed(w, ids, eps):
    ids = torch.as_tensor(ids, dtype=torch.long)
    n = ids.numel()
    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    return layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)


def attention_probs(x, w, p, heads):
    """alpha (H, n, n) and the value rows v = x W_V + b_V (n, d) of layer prefix p."""
    n, d = x.shape
    dh = d // heads
    q = linear(x, w[p + "attention.self.query.weight"], w[p + "attention.self.query.bias"])
    k = linear(x, w[p + "attention.self.key.weight"], w[p + "attention.self.key.bias"])
    v = linear(x, w[p + "attention.self.value.weight"], w[p + "attention.self.value.bias"])
    qh = q.reshape(n, heads, dh).transpose(0, 1)
    kh = k.reshape(n, heads, dh).transpose(0, 1)
    alpha = softmax_rows(qh @ kh.transpose(1, 2) / math.sqrt(dh))
    return alpha, v


def layer_output(x, alpha, v, w, p, eps):
    """The whole layer's output from input x (n, d), attention alpha (H, n, n) and value rows v
    (..., n, d) (a leading batch axis allowed): attention, output dense, residual + LN_1, FFN,
    residual + LN_2."""
    heads = alpha.shape[0]
    n, d = x.shape
    dh = d // heads
    vh = v.reshape(*v.shape[:-2], n, heads, dh).transpose(-3, -2)        # (..., H, n, dh)
    context = (alpha @ vh).transpose(-3, -2).reshape(*v.shape[:-2], n, d)
    attended = linear(context, w[p + "attention.output.dense.weight"],
                      w[p + "attention.output.dense.bias"])
    z = layer_norm(attended + x, w[p + "attention.output.LayerNorm.weight"],
                   w[p + "attention.output.LayerNorm.bias"], eps)
    hidden = gelu(linear(z, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"]))
    out = linear(hidden, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
    return layer_norm(out + z, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
                      eps)


def decompose(x, alpha, v, w, p, eps):
    """The per-pair quantities of one layer. Returns a dict of tensors:
    f (H, n, d) = f_h(x_j); A (n, n, d) = sum_h alpha^h_ij f_h(x_j); y (n, d); s (n,);
    z (n, d) = LN_1(y); T (n, n, d) = T_i(x_j); bias_term (n, d) = gamma (b_O - mean b_O) / s_i."""
    heads = alpha.shape[0]
    n, d = x.shape
    dh = d // heads
    w_o = w[p + "attention.output.dense.weight"]                      # (out d, in d)
    b_o = w[p + "attention.output.dense.bias"]
    gamma = w[p + "attention.output.LayerNorm.weight"]
    beta = w[p + "attention.output.LayerNorm.bias"]
    vh = v.reshape(n, heads, dh).transpose(0, 1)                      # (H, n, dh)
    w_oh = w_o.reshape(d, heads, dh).permute(1, 2, 0)                 # (H, dh, d): W_O[:, cols].T
    f = vh @ w_oh                                                     # (H, n, d)
    A = torch.einsum("hij,hjd->ijd", alpha, f)                        # (n, n, d)
    y = x + A.sum(dim=1) + b_o
    mean = y.mean(dim=-1, keepdim=True)
    s = torch.sqrt(((y - mean) ** 2).mean(dim=-1) + eps)              # (n,)
    z = (y - mean) / s[:, None] * gamma + beta
    u = A.clone()
    idx = torch.arange(n)
    u[idx, idx] += x
    T = gamma * (u - u.mean(dim=-1, keepdim=True)) / s[:, None, None]
    bias_term = gamma * (b_o - b_o.mean()) / s[:, None]
    return {"f": f, "A": A, "y": y, "s": s, "z": z, "T": T, "bias_term": bias_term,
            "beta": beta}


def alti_from(z, T):
    """ALTI of one layer: c_ij = max(0, ||z_i||_1 - ||z_i - T_ij||_1), rows normalised."""
    c = torch.clamp(z.abs().sum(-1)[:, None] - (z[:, None, :] - T).abs().sum(-1), min=0.0)
    total = c.sum(dim=1, keepdim=True)
    return torch.where(total > 0, c / torch.where(total > 0, total, torch.ones_like(total)),
                       torch.zeros_like(c))


def value_zeroing_from(x, alpha, v, w, p, eps):
    """value_zeroing[i][j] for one layer, alpha (H, n, n) and value rows v (n, d) given."""
    n = x.shape[0]
    original = layer_output(x, alpha, v, w, p, eps)                  # (n, d)
    zeroed = v.unsqueeze(0).repeat(n, 1, 1)                           # (n_j, n, d)
    zeroed[torch.arange(n), torch.arange(n)] = 0.0                    # batch j: row j zeroed
    altered = layer_output(x, alpha, zeroed, w, p, eps)               # (n_j, n_i, d)
    dot = (altered * original[None]).sum(-1)
    norms = altered.norm(dim=-1) * original.norm(dim=-1)[None]
    distance = torch.clamp(1.0 - dot / norms, 0.0, 2.0).T             # (i, j)
    total = distance.sum(dim=1, keepdim=True)
    return torch.where(total > 0, distance / torch.where(total > 0, total, torch.ones_like(total)),
                       torch.zeros_like(distance))


def rollout_matrices(alpha_layers):
    """M_l = rows renormalised of 0.5 * mean_h alpha_l + 0.5 I, for every layer (numpy)."""
    out = []
    for alpha in alpha_layers:
        a = np.asarray(alpha, dtype=np.float64)
        m = 0.5 * a.mean(axis=0) + 0.5 * np.eye(a.shape[-1])
        out.append(m / m.sum(axis=1, keepdims=True))
    return out


def chain(matrices):
    """matrices[L-1] @ ... @ matrices[0]."""
    result = np.eye(matrices[0].shape[0])
    for m in matrices:
        result = m @ result
    return result


# ---------------------------------------------------------------------------- max flow (Dinic)
class _Graph:
    def __init__(self, nodes):
        self.adj = [[] for _ in range(nodes)]
        self.to, self.cap = [], []

    def add(self, a, b, c):
        self.adj[a].append(len(self.to)); self.to.append(b); self.cap.append(c)
        self.adj[b].append(len(self.to)); self.to.append(a); self.cap.append(0.0)


def max_flow(graph, caps, source, sink, eps=FLOW_EPS):
    """Dinic's max-flow on a copy of the capacities caps (one per arc of graph, reverse arcs
    0). Residual capacities <= eps are saturated."""
    cap = list(caps)
    to, adj = graph.to, graph.adj
    nodes = len(adj)
    total = 0.0
    while True:
        level = [-1] * nodes
        level[source] = 0
        queue = deque([source])
        while queue:
            a = queue.popleft()
            for e in adj[a]:
                if cap[e] > eps and level[to[e]] < 0:
                    level[to[e]] = level[a] + 1
                    queue.append(to[e])
        if level[sink] < 0:
            return total
        pointer = [0] * nodes

        def push(a, limit):
            if a == sink:
                return limit
            arcs = adj[a]
            while pointer[a] < len(arcs):
                e = arcs[pointer[a]]
                b = to[e]
                if cap[e] > eps and level[b] == level[a] + 1:
                    pushed = push(b, min(limit, cap[e]))
                    if pushed > 0.0:
                        cap[e] -= pushed
                        cap[e ^ 1] += pushed
                        return pushed
                pointer[a] += 1
            return 0.0

        while True:
            pushed = push(source, math.inf)
            if pushed <= 0.0:
                break
            total += pushed


def attention_flow(matrices, rows=None):
    """flow (n, n) of the layered graph of the L matrices M_l (numpy (n, n) each), rows i in
    `rows` (default all; the others are NaN)."""
    layers, n = len(matrices), matrices[0].shape[0]
    rows = range(n) if rows is None else rows
    graph = _Graph((layers + 1) * n)
    caps = []
    for l in range(1, layers + 1):
        m = matrices[l - 1]
        for i2 in range(n):
            for j2 in range(n):
                graph.add((l - 1) * n + j2, l * n + i2, float(m[i2, j2]))
                caps.extend((float(m[i2, j2]), 0.0))
    flow = np.full((n, n), np.nan)
    for i in rows:
        for j in range(n):
            flow[i, j] = max_flow(graph, caps, j, layers * n + i)
    return flow


# ------------------------------------------------------------------------- ranks and Spearman
def tie_ranks(values):
    """Average ranks (1-based); after sorting ascending, neighbours within TIE_EPS chain into
    one tie group."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    ranks = np.empty(len(values))
    start = 0
    for k in range(1, len(values) + 1):
        if k == len(values) or ordered[k] - ordered[k - 1] > TIE_EPS:
            ranks[order[start:k]] = (start + k - 1) / 2.0 + 1.0
            start = k
    return ranks


def spearman(a, b):
    if len(a) < 3:
        return None
    ra, rb = tie_ranks(a), tie_ranks(b)
    da, db = ra - ra.mean(), rb - rb.mean()
    va, vb = (da * da).sum(), (db * db).sum()
    if va == 0.0 or vb == 0.0:
        return None
    return float((da * db).sum() / math.sqrt(va * vb))


# ------------------------------------------------------------------------------- masked LM
def encoder(w, ids, heads, layers, eps):
    x = embed(w, ids, eps)
    for l in range(layers):
        p = f"encoder.layer.{l}."
        alpha, v = attention_probs(x, w, p, heads)
        x = layer_output(x, alpha, v, w, p, eps)
    return x


def mlm_log_probs(w, hidden, eps):
    """log softmax of the masked-LM logits for hidden states (..., d)."""
    t = gelu(linear(hidden, w["cls.predictions.transform.dense.weight"],
                    w["cls.predictions.transform.dense.bias"]))
    t = layer_norm(t, w["cls.predictions.transform.LayerNorm.weight"],
                   w["cls.predictions.transform.LayerNorm.bias"], eps)
    logits = t @ w["embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]
    return torch.log_softmax(logits, dim=-1)


# ------------------------------------------------------------------------------------ lenses
def lenses(config, weights, ids, target=None, flow_rows=None):
    """Every lens for one sentence of ids (see the module docstring). flow_rows: None (all) or
    an iterable of row indices."""
    w = _weights64(weights)
    eps = float(config.get("layer_norm_eps", 1e-12))
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    ids = [int(i) for i in ids]
    n = len(ids)

    weighted, weighted_layer, mixing, mixing_ratio, alti, vz, alphas = [], [], [], [], [], [], []
    hidden = [embed(w, ids, eps)]
    parts = []
    x = hidden[0]
    for l in range(layers):
        p = f"encoder.layer.{l}."
        alpha, v = attention_probs(x, w, p, heads)
        d = decompose(x, alpha, v, w, p, eps)
        parts.append(d)
        alphas.append(alpha.numpy())
        weighted.append((alpha * d["f"].norm(dim=-1)[:, None, :]).numpy())
        weighted_layer.append(d["A"].norm(dim=-1).numpy())
        mix = d["T"].norm(dim=-1)
        mixing.append(mix.numpy())
        off = mix.sum(dim=1) - mix.diagonal()
        mixing_ratio.append((off / mix.sum(dim=1)).numpy())
        alti.append(alti_from(d["z"], d["T"]).numpy())
        vz.append(value_zeroing_from(x, alpha, v, w, p, eps).numpy())
        x = layer_output(x, alpha, v, w, p, eps)
        hidden.append(x)

    m = rollout_matrices(alphas)
    rows = list(range(n)) if flow_rows is None else sorted(set(int(r) for r in flow_rows))
    flow = attention_flow(m, rows)
    flow_normalized = flow / flow.sum(axis=1, keepdims=True)
    out = {
        "ids": np.array(ids), "attention": np.array(alphas),
        "hidden": torch.stack(hidden).numpy(), "parts": parts,
        "weighted": np.array(weighted), "weighted_layer": np.array(weighted_layer),
        "mixing": np.array(mixing), "mixing_ratio": np.array(mixing_ratio),
        "alti": np.array(alti), "value_zeroing": np.array(vz),
        "rollout": chain(m), "alti_rollout": chain(alti),
        "flow": flow, "flow_normalized": flow_normalized, "flow_rows": rows,
    }
    if target is None:
        return out

    t = int(target)
    log_probs = mlm_log_probs(w, x[t], eps)
    top1 = int(torch.argmax(log_probs).item())   # first index of the maximum: lowest id on ties
    logprob = float(log_probs[top1])
    occlusion = np.full(n, np.nan)
    valid = [j for j in range(n) if j != t and ids[j] not in (CLS_ID, SEP_ID)]
    for j in valid:
        occluded = list(ids)
        occluded[j] = MASK_ID
        h = encoder(w, occluded, heads, layers, eps)
        occlusion[j] = logprob - float(mlm_log_probs(w, h[t], eps)[top1])
    flow_row_t = flow[t] if t in rows else attention_flow(m, [t])[t]
    lens_rows = {
        "attention_last_mean": alphas[-1].mean(axis=0)[t],
        "rollout": out["rollout"][t],
        "flow": flow_row_t,
        "alti_rollout": out["alti_rollout"][t],
        "weighted_layer_last": out["weighted_layer"][-1][t],
    }
    out.update({
        "target": t, "target_top1": top1, "target_logprob": logprob, "occlusion": occlusion,
        "faithfulness": {k: spearman(occlusion[valid], row[valid]) for k, row in lens_rows.items()},
    })
    return out
