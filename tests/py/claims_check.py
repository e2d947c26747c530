"""Every set claim of the series, re-derived by independent code on both sentence sets.

The site build (scripts/site/make_sets.mjs) writes the set statistics the posts show, over the
series' set (web/posts/sentences.txt) and the held-out set (web/posts/heldout.txt), with the
f32 model. This check reads those files and re-derives their numbers without the project's C++
or JS:

* where each word's most confident head points, its value-weighted reading, the content-head
  rule, and each head's share of word rows with at least 0.9 on one neighbour: from a float64
  forward pass (scripts/reference/reference_bert.py) over every sentence, tokenized by the
  independent tokenizer (tests/py/bert_reference.py), head labels by the label rule written
  again in tests/py/test_sentence_set.py; the share intervals from the same splitmix64
  resamples;
* the contribution summaries (zero- and mean-ablation, both sets): from the per-word
  measurements, every point value, the agreement's chance levels (both distributions kept;
  position kept too, with each word's position class found again from the independent
  tokenizer) and their permutation p-values by shuffles of its own;
* the pronoun study's baselines and per-head counts (both case files): from the cases and the
  float64 attention;
* the lenses post (attention-cli lens-set, both sets): every mean rank correlation, undefined
  count, paired difference, share and mixing ratio, and their intervals, from the per-target and
  per-sentence files with resamples and percentiles of its own; which words are targets and how
  many rows each sentence has, from the independent tokenizer; and, for three sentences of each
  set, every target's correlations and each sentence's share sums from the float64 lenses
  (scripts/reference/lenses_reference.py, written from the definitions, not from the C++).

It prints each claim's numbers on both sets and exits non-zero on a mismatch. Run after the site
build: scripts/test.sh does (python3 tests/py/claims_check.py).
"""

import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]

from bert_reference import BertReference, basic_tokenize, lowercase_like_transformers  # noqa: E402
from helpers import ROOT  # noqa: E402
from test_sentence_set import SentenceSetTest, head_counts, interval, reference_words, resamples, summarize_words  # noqa: E402

from scripts.model import modelfile  # noqa: E402
from scripts.reference import lenses_reference, reference_bert  # noqa: E402

# Counts from float64 against the f32 engine: a near-tie between two heads' ratios can fall the
# other way, so a count may differ by this many words (each difference is printed).
COUNT_TOLERANCE = 3
# Point values re-derived from the printed per-word numbers: only the JSON's rounding differs.
STATISTIC_TOLERANCE = 1e-6
# Our shuffles against the build's (both Monte Carlo, 10,000 draws each): p-values agree within this.
P_TOLERANCE = 0.02
SHUFFLES = 10000
# The lenses post's numbers re-derived from the printed per-target and per-sentence values (9 and
# 12 significant digits): intervals from the same resamples agree to rounding.
LENS_STATISTIC_TOLERANCE = 1e-6
# The float32 engine against the float64 lenses: each rank correlation (the parity bar of
# tests/py/test_lenses.py) and each sentence's share sums (a sum over its rows of shares, each
# within 1e-5).
RHO_TOLERANCE = 1e-3
SHARE_SUM_TOLERANCE = 1e-4
# Sentences of each set whose targets are re-derived with the float64 lenses.
LENS_SENTENCES = 3

failures = []


def check(ok, message):
    if not ok:
        failures.append(message)
        print(f"  MISMATCH: {message}")


def load_set():
    manifest = json.load(open(os.path.join(ROOT, "web", "models", "manifest.json"), encoding="utf-8"))
    sha = manifest["sets"]["sha256"]
    folder = os.path.join(ROOT, "web", "sets")
    read = lambda name: json.load(open(os.path.join(folder, name), encoding="utf-8"))
    words = {"set zero": read(f"{sha}.words.json")["words"], "set mean": read(f"{sha}.words.mean.json")["words"],
             "held-out zero": read(f"{sha}.words.heldout.json")["words"],
             "held-out mean": read(f"{sha}.words.heldout.mean.json")["words"]}
    lens_words = {"set": read(f"{sha}.words.lenses.json"), "held-out": read(f"{sha}.words.heldout.lenses.json")}
    return read(f"{sha}.json"), words, lens_words


class Reference:
    """The f32 model's weights in float64, the independent tokenizer and forward pass."""

    def __init__(self):
        decoded = modelfile.read(os.path.join(ROOT, "model_data", "explainer-mini.attn"))
        self.config = dict(decoded.config.__dict__)
        self.weights = {k: torch.from_numpy(v).to(torch.float64) for k, v in decoded.tensors.items()}
        with open(os.path.join(ROOT, "model_data", "vocab.txt"), encoding="utf-8") as f:
            self.tokenizer = BertReference(f.read().split("\n")[:-1])
        self.layers = self.config["num_hidden_layers"]
        self.heads = self.config["num_attention_heads"]

    def tokens(self, text):
        """ids, roles ('cls', 'sep', 'punctuation', 'ordinary') and word index of each token."""
        words = reference_words(self.tokenizer, text)
        ids, roles, word_of = [reference_bert.CLS_ID], ["cls"], [-1]
        for w, (pieces, punct) in enumerate(words):
            for piece in pieces:
                ids.append(piece)
                roles.append("punctuation" if punct else "ordinary")
                word_of.append(w)
        ids.append(reference_bert.SEP_ID)
        roles.append("sep")
        word_of.append(-2)
        return ids, roles, word_of

    def value_norms(self, hidden):
        """(L, H, n): ||W_O^h v_j^h|| from each layer's input."""
        d = hidden.shape[-1]
        dh = d // self.heads
        out = np.zeros((self.layers, self.heads, hidden.shape[1]))
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}.attention."
            v = torch.from_numpy(hidden[layer]) @ self.weights[p + "self.value.weight"].T + self.weights[p + "self.value.bias"]
            wo = self.weights[p + "output.dense.weight"]
            for h in range(self.heads):
                carried = v[:, h * dh:(h + 1) * dh] @ wo[:, h * dh:(h + 1) * dh].T
                out[layer, h] = carried.norm(dim=1).numpy()
        return out


def confident_counts(ref, text, rule):
    """One sentence's ConfidentCounts, by the definitions in wasm/core/sentence_set.h."""
    ids, roles, word_of = ref.tokens(text)
    hidden, attention = reference_bert.forward(ref.config, ref.weights, ids)
    norms = ref.value_norms(hidden)
    n = len(ids)
    K = ref.layers * ref.heads
    rows = attention.reshape(K, n, n)
    special = ["special" if role in ("cls", "sep") else role for role in roles]
    labels = [SentenceSetTest.label(None, c, rule) for c in head_counts(attention, special)[0]]
    content_head = [label not in ("previous-token", "next-token", "self", "[CLS]/[SEP] sink") for label in labels]
    c = {"words": 0, "positional": 0, "neighbour_word": 0, "value_weighted_positional": 0, "content_rows": 0,
         "wins": np.zeros(K, int), "value_weighted_wins": np.zeros(K, int), "content_wins": np.zeros(K, int),
         "sharp": np.zeros(K, int), "largest": np.zeros(K)}
    for i in range(n):
        if roles[i] != "ordinary":
            continue
        c["words"] += 1
        ratio = rows[:, i, :].max(axis=1) * n
        argmax = rows[:, i, :].argmax(axis=1)
        best = int(np.argmax(ratio))
        j = int(argmax[best])
        c["wins"][best] += 1
        if abs(j - i) == 1:
            c["positional"] += 1
            c["neighbour_word"] += roles[j] == "ordinary" and word_of[j] != word_of[i]
        before = rows[:, i, i - 1] if i > 0 else np.zeros(K)
        after = rows[:, i, i + 1] if i + 1 < n else np.zeros(K)
        c["sharp"] += np.maximum(before, after) >= 0.9
        c["largest"] += rows[:, i, :].max(axis=1)
        content_row = [content_head[k] and abs(int(argmax[k]) - i) > 1 and roles[int(argmax[k])] == "ordinary"
                       and word_of[int(argmax[k])] != word_of[i] for k in range(K)]
        tiers = [[k for k in range(K) if content_row[k]], [k for k in range(K) if content_head[k]], list(range(K))]
        tier = next(t for t, members in enumerate(tiers) if members)
        chosen = max(tiers[tier], key=lambda k: (ratio[k], -k))
        c["content_wins"][chosen] += 1
        c["content_rows"] += tier == 0
        weighted = rows[:, i, :] * norms.reshape(K, n)
        share = weighted.max(axis=1) / weighted.sum(axis=1) * n
        vw = int(np.argmax(share))
        c["value_weighted_wins"][vw] += 1
        c["value_weighted_positional"] += abs(int(weighted[vw].argmax()) - i) == 1
    return c


def check_profile(name, profile, sentences, ref):
    rule = profile["label_rule"]
    per_sentence = [confident_counts(ref, text, rule) for text in sentences]
    total = {k: sum(s[k] for s in per_sentence) for k in per_sentence[0]}
    got = profile["confident"]
    for key in ("words", "positional", "neighbour_word", "value_weighted_positional", "content_rows"):
        tolerance = 0 if key == "words" else COUNT_TOLERANCE
        check(abs(got[key] - total[key]) <= tolerance, f"{name}: confident {key} {got[key]} against {total[key]}")
    for key in ("wins", "value_weighted_wins", "content_wins"):
        worst = int(np.abs(np.array(got[key]) - total[key]).max())
        check(worst <= COUNT_TOLERANCE, f"{name}: {key} differ by up to {worst}: {got[key]} against {list(total[key])}")
    for k, head in enumerate(profile["heads"]):
        sharp = head["sharp_neighbour"]["numerator"]
        check(abs(sharp - total["sharp"][k]) <= COUNT_TOLERANCE, f"{name}: head {k} sharp-neighbour rows {sharp} against {total['sharp'][k]}")
        check(abs(head["mean_largest_word_weight"] - total["largest"][k] / total["words"]) < 1e-5,
              f"{name}: head {k} mean largest weight")
    # The share's interval from the same resamples, where the counts agree.
    boot = profile["bootstrap"]
    if got["positional"] == total["positional"]:
        shares = []
        for draw in resamples(len(per_sentence), boot["resamples"], boot["seed"]):
            words = sum(per_sentence[s]["words"] for s in draw)
            shares.append(sum(per_sentence[s]["positional"] for s in draw) / words)
        low, high = interval(shares, boot["level"])
        est = got["positional_share"]
        check(abs(est["low"] - low) < 1e-7 and abs(est["high"] - high) < 1e-7,
              f"{name}: positional share interval [{est['low']}, {est['high']}] against [{low}, {high}]")
    sharp_heads = [f"L{h['layer']}H{h['head']} {100 * h['sharp_neighbour']['estimate']['value']:.1f}%"
                   for h in profile["heads"] if h["sharp_neighbour"]["estimate"]["value"] > 0.01]
    print(f"  {name}: most confident head on a neighbour for {total['positional']} of {total['words']} words "
          f"({100 * total['positional'] / total['words']:.1f}%, build [{100 * got['positional_share']['low']:.1f}, "
          f"{100 * got['positional_share']['high']:.1f}]); another word {total['neighbour_word']}; value-weighted "
          f"{total['value_weighted_positional']}; content rows {total['content_rows']}; >= 0.9 on a neighbour: {', '.join(sharp_heads)}")


def position_classes(ref, sentences, words):
    cache = {}
    out = []
    for w in words:
        if w["sentence"] not in cache:
            cache[w["sentence"]] = ref.tokens(sentences[w["sentence"]])[1]
        roles = cache[w["sentence"]]
        i = w["token"]
        before = {"cls": 0, "punctuation": 1}.get(roles[i - 1], 2)
        after = {"punctuation": 0, "sep": 1}.get(roles[i + 1], 2)
        out.append(before * 3 + after)
    return np.array(out)


def agreement(a, b, classes, rng):
    """Observed, expected and a permutation p-value of a == b, shuffling b within classes."""
    observed = int((a == b).sum())
    expected = 0.0
    groups = [np.flatnonzero(classes == c) for c in np.unique(classes)]
    for g in groups:
        ca = np.bincount(a[g], minlength=64)
        cb = np.bincount(b[g], minlength=64)
        expected += float((ca * cb).sum()) / len(g)
    hits = 0
    shuffled = b.copy()
    for _ in range(SHUFFLES):
        for g in groups:
            shuffled[g] = b[g][rng.permutation(len(g))]
        hits += int((a == shuffled).sum()) >= observed
    return observed, expected, (hits + 1) / (SHUFFLES + 1)


def check_contribution(name, part, words, sentences, ref, rng):
    summary = part["summary"]
    heads = part["heads"]
    mine = summarize_words(words, range(len(words)), heads, part["predicted_rank"])
    for key in ("agreement_share", "rho_per_word", "rho_constant_attention", "rho_beyond_head", "within_rho", "within_rho_log", "top1_survival"):
        got = summary["agreement"]["share"]["value"] if key == "agreement_share" else summary[key]["value"]
        check(abs(got - mine[key]) < STATISTIC_TOLERANCE, f"{name}: {key} {got} against {mine[key]}")
    classes = position_classes(ref, sentences, words)
    check(all(int(w["position_class"]) == c for w, c in zip(words, classes)), f"{name}: position classes differ")
    a, b = mine["most_attending"], mine["most_consequential"]
    plain = agreement(a, b, np.zeros(len(a), int), rng)
    kept = agreement(a, b, classes, rng)
    got = summary["agreement"]
    check(got["observed"] == plain[0], f"{name}: agreement {got['observed']} against {plain[0]}")
    check(abs(got["expected"] - plain[1]) < 1e-6, f"{name}: expected {got['expected']} against {plain[1]}")
    check(abs(got["position_kept"]["expected"] - kept[1]) < 1e-6, f"{name}: position-kept expected {got['position_kept']['expected']} against {kept[1]}")
    check(abs(got["p_value"] - plain[2]) <= P_TOLERANCE, f"{name}: p {got['p_value']} against {plain[2]}")
    check(abs(got["position_kept"]["p_value"] - kept[2]) <= P_TOLERANCE, f"{name}: position-kept p {got['position_kept']['p_value']} against {kept[2]}")
    print(f"  {name}: {len(words)} words; agreement {plain[0]} against {plain[1]:.1f} (p {plain[2]:.4f}), "
          f"position kept {kept[1]:.1f} (p {kept[2]:.4f}); rho per word {mine['rho_per_word']:.4f}, beyond head "
          f"{mine['rho_beyond_head']:.4f}; within {mine['within_rho']:.4f}, log {mine['within_rho_log']:.4f}; "
          f"survival {100 * mine['top1_survival']:.1f}%")
    return mine


def check_pronouns(name, study, path, ref):
    lines = [line.split("\t") for line in open(path, encoding="utf-8").read().split("\n")[1:] if line.strip()]
    first = nearest = 0
    among = np.zeros(ref.layers * ref.heads, int)
    first_picks = np.zeros_like(among)
    right = []
    for sentence, pronoun, occurrence, antecedent, candidates in lines:
        candidates = candidates.split(",")
        first += candidates[0] == antecedent
        words = basic_tokenize(lowercase_like_transformers(sentence))
        pieces = [len(ref.tokenizer.wordpiece(w)) for w in words]
        start = [1 + sum(pieces[:k]) for k in range(len(words))]
        p_word = [k for k, w in enumerate(words) if w == pronoun][int(occurrence) - 1]
        position = lambda word: start[max(k for k, w in enumerate(words[:p_word]) if w == word)]
        spots = [position(c) for c in candidates]
        nearest += max(spots) == position(antecedent)
        ids = ref.tokens(sentence)[0]
        _, attention = reference_bert.forward(ref.config, ref.weights, ids)
        rows = attention.reshape(-1, len(ids), len(ids))[:, start[p_word], :]
        picks = [spots[int(np.argmax(rows[k, spots]))] for k in range(rows.shape[0])]
        among += np.array([p == position(antecedent) for p in picks])
        first_picks += np.array([p == spots[0] for p in picks])
        right.append([p == position(antecedent) for p in picks])
    check(study["first"] == first, f"{name}: first-noun baseline {study['first']} against {first}")
    check(study["nearest"] == nearest, f"{name}: nearest-noun baseline {study['nearest']} against {nearest}")
    got = np.array([x["among_candidates"] for x in study["per_head"]])
    check(int(np.abs(got - among).max()) <= COUNT_TOLERANCE, f"{name}: among candidates {list(got)} against {list(among)}")
    best = int(np.argmax(among))
    print(f"  {name}: {len(lines)} cases; first noun {first}, nearest {nearest}; best head L{best // ref.heads + 1}H{best % ref.heads + 1} "
          f"{among[best]} (first picks {first_picks[best]})")


def check_lenses(name, part, words, sentences, ref):
    """The lenses post's numbers (attention-cli lens-set) on one set, re-derived."""
    summary = part["summary"]
    names = part["lenses"]
    L = part["layers"]
    K = len(names)
    targets = words["targets"]
    per_sentence = words["per_sentence"]
    check(len(per_sentence) == len(sentences), f"{name}: lens-set has {len(per_sentence)} sentences against {len(sentences)}")
    # Which words are targets (every whole word) and how many ordinary-token rows a sentence has,
    # from the independent tokenizer.
    expected_targets = []
    for s, text in enumerate(sentences):
        ids, roles, word_of = ref.tokens(text)
        whole = [i for i in range(len(ids)) if roles[i] == "ordinary" and word_of.count(word_of[i]) == 1]
        expected_targets += [(s, i, ids[i]) for i in whole]
        rows = sum(r == "ordinary" for r in roles)
        check(per_sentence[s]["rows"] == rows, f"{name}: sentence {s} has {per_sentence[s]['rows']} ordinary rows against {rows}")
    got_targets = [(t["sentence"], t["token"], t["id"]) for t in targets]
    check(got_targets == expected_targets, f"{name}: the targets differ from the whole words ({len(got_targets)} against {len(expected_targets)})")
    check(summary["targets"] == len(targets), f"{name}: {summary['targets']} targets against {len(targets)}")
    # Per-target matrices: rho (targets, K) with NaN where undefined; each sentence's sums.
    rho = np.array([[math.nan if r is None else r for r in t["rho"]] for t in targets])
    sentence_of = np.array([t["sentence"] for t in targets])
    S = len(per_sentence)
    defined = ~np.isnan(rho)
    rho0 = np.where(defined, rho, 0.0)
    rho_sum = np.zeros((S, K))
    rho_count = np.zeros((S, K))
    np.add.at(rho_sum, sentence_of, rho0)
    np.add.at(rho_count, sentence_of, defined)
    pairs = [(a, b) for a in range(K) for b in range(a + 1, K)]
    both = np.stack([defined[:, a] & defined[:, b] for a, b in pairs], axis=1)
    diff0 = np.stack([np.where(both[:, p], rho0[:, a] - rho0[:, b], 0.0) for p, (a, b) in enumerate(pairs)], axis=1)
    diff_sum = np.zeros((S, len(pairs)))
    diff_count = np.zeros((S, len(pairs)))
    np.add.at(diff_sum, sentence_of, diff0)
    np.add.at(diff_count, sentence_of, both)
    readings, categories = part["readings"], part["categories"]
    share_sum = np.array([[[ps["shares"][r][c] for c in categories] for r in readings] for ps in per_sentence])  # (S, R, C, L)
    mixing_sum = np.array([ps["mixing_ratio"] for ps in per_sentence])  # (S, L)
    rows = np.array([ps["rows"] for ps in per_sentence], dtype=float)
    check(summary["rows"] == int(rows.sum()), f"{name}: {summary['rows']} rows against {int(rows.sum())}")

    def statistics(weights):
        """Every statistic for one draw, weights[s] = how often sentence s is drawn."""
        n = weights @ rho_count
        means = np.where(n > 0, (weights @ rho_sum) / np.where(n > 0, n, 1), math.nan)
        dn = weights @ diff_count
        diffs = np.where(dn > 0, (weights @ diff_sum) / np.where(dn > 0, dn, 1), math.nan)
        r = weights @ rows
        shares = np.tensordot(weights, share_sum, axes=1) / r
        mixing = (weights @ mixing_sum) / r
        return means, diffs, shares, mixing

    means, diffs, shares, mixing = statistics(np.ones(S))
    boot = part["bootstrap"]
    draws = resamples(S, boot["resamples"], boot["seed"])
    resampled = [statistics(np.bincount(np.array(d), minlength=S).astype(float)) for d in draws]
    level = boot["level"]

    def compare(label, estimate, value, values):
        low, high = interval(values, level)
        ok = (abs(estimate["value"] - value) < LENS_STATISTIC_TOLERANCE and abs(estimate["low"] - low) < LENS_STATISTIC_TOLERANCE
              and abs(estimate["high"] - high) < LENS_STATISTIC_TOLERANCE)
        check(ok, f"{name}: {label} {estimate} against {value} [{low}, {high}]")

    best_counts = np.zeros(K)
    for m, _, _, _ in resampled:
        best_counts[int(np.argmax(np.where(np.isnan(m[:K - 1]), -np.inf, m[:K - 1])))] += 1
    for k, lens in enumerate(names):
        got = summary["faithfulness"][lens]
        check(got["defined"] == int(defined[:, k].sum()) and got["undefined"] == int((~defined[:, k]).sum()),
              f"{name}: {lens} defined/undefined {got['defined']}/{got['undefined']} against {int(defined[:, k].sum())}/{int((~defined[:, k]).sum())}")
        compare(f"{lens} mean rho", got["mean_rho"], means[k], [m[k] for m, _, _, _ in resampled])
        if k < K - 1:
            check(abs(got["best_share"] - best_counts[k] / len(draws)) < 1e-6, f"{name}: {lens} best in {got['best_share']} of resamples against {best_counts[k] / len(draws)}")
    best = names[int(np.nanargmax(means[:K - 1]))]
    check(summary["best"] == best, f"{name}: best lens {summary['best']} against {best}")
    for p, (a, b) in enumerate(pairs):
        got = next(d for d in summary["differences"] if d["a"] == names[a] and d["b"] == names[b])
        check(got["targets"] == int(both[:, p].sum()), f"{name}: {names[a]} - {names[b]} over {got['targets']} targets against {int(both[:, p].sum())}")
        compare(f"{names[a]} - {names[b]}", got["mean"], diffs[p], [d[p] for _, d, _, _ in resampled])
    for r, reading in enumerate(readings):
        for c, category in enumerate(categories):
            for layer in range(L):
                compare(f"{reading} {category} share, layer {layer + 1}", summary["shares"][reading][category][layer], shares[r, c, layer],
                        [x[r, c, layer] for _, _, x, _ in resampled])
                if r > 0:
                    compare(f"{reading} - attention {category} share, layer {layer + 1}", summary["share_minus_attention"][reading][category][layer],
                            shares[r, c, layer] - shares[0, c, layer], [x[r, c, layer] - x[0, c, layer] for _, _, x, _ in resampled])
    for layer in range(L):
        compare(f"mixing ratio, layer {layer + 1}", summary["mixing_ratio"][layer], mixing[layer], [x[layer] for _, _, _, x in resampled])

    # The first sentences again with the float64 lenses: every target's correlations, and the
    # share sums.
    worst_rho = worst_share = 0.0
    checked = 0
    for s in range(min(LENS_SENTENCES, S)):
        ids, roles, _ = ref.tokens(sentences[s])
        plain = lenses_reference.lenses(ref.config, ref.weights, ids, flow_rows=[])
        n = len(ids)
        mean_attention = plain["attention"].mean(axis=1)  # (L, n, n)
        for layer in range(L):
            rows_of = {"attention": mean_attention[layer], "weighted_layer": plain["weighted_layer"][layer], "alti": plain["alti"][layer]}
            mix = 0.0
            sums = {(r, c): 0.0 for r in readings for c in categories}
            for i in range(n):
                if roles[i] != "ordinary":
                    continue
                mix += plain["mixing_ratio"][layer][i]
                for reading in readings:
                    row = rows_of[reading][i]
                    total = row.sum()
                    if total <= 0:
                        continue
                    sums[(reading, "cls")] += sum(row[j] for j in range(n) if roles[j] == "cls") / total
                    sums[(reading, "sep")] += sum(row[j] for j in range(n) if roles[j] == "sep") / total
                    sums[(reading, "punctuation")] += sum(row[j] for j in range(n) if roles[j] == "punctuation") / total
                    sums[(reading, "self")] += row[i] / total
            worst_share = max(worst_share, abs(per_sentence[s]["mixing_ratio"][layer] - mix),
                              *(abs(per_sentence[s]["shares"][r][c][layer] - v) for (r, c), v in sums.items()))
        for t in (t for t in targets if t["sentence"] == s):
            masked = list(ids)
            masked[t["token"]] = lenses_reference.MASK_ID
            out = lenses_reference.lenses(ref.config, ref.weights, masked, target=t["token"], flow_rows=[t["token"]])
            occluded = [j for j in range(n) if not math.isnan(out["occlusion"][j])]
            distance = lenses_reference.spearman(out["occlusion"][occluded], [-abs(j - t["token"]) for j in occluded])
            mine = [out["faithfulness"][lens] for lens in names[:K - 1]] + [distance]
            check(out["target_top1"] == t["top1"], f"{name}: sentence {s} token {t['token']}: top guess {t['top1']} against {out['target_top1']}")
            for lens, a, b in zip(names, t["rho"], mine):
                if a is None or b is None:
                    check(a is None and b is None, f"{name}: sentence {s} token {t['token']} {lens}: rho {a} against {b}")
                    continue
                worst_rho = max(worst_rho, abs(a - b))
                check(abs(a - b) <= RHO_TOLERANCE, f"{name}: sentence {s} token {t['token']} {lens}: rho {a} against {b}")
            checked += 1
    check(worst_share <= SHARE_SUM_TOLERANCE, f"{name}: share sums differ from the float64 lenses by {worst_share:.2e}")
    order = sorted(range(K - 1), key=lambda k: -means[k])
    print(f"  {name} lenses: {len(targets)} targets; mean rho " + ", ".join(f"{names[k]} {means[k]:.4f}" for k in order)
          + f"; {names[K - 1]} {means[K - 1]:.4f}; best {best}; [SEP] share by layer, weights "
          + " ".join(f"{100 * shares[0, categories.index('sep'), l]:.1f}%" for l in range(L)) + ", weight x size "
          + " ".join(f"{100 * shares[1, categories.index('sep'), l]:.1f}%" for l in range(L)) + "; mixing "
          + " ".join(f"{100 * mixing[l]:.1f}%" for l in range(L))
          + f"; float64 lenses on {checked} targets of {min(LENS_SENTENCES, S)} sentences: rho within {worst_rho:.1e}, share sums within {worst_share:.1e}")


def main():
    set_file, words, lens_words = load_set()
    ref = Reference()
    rng = np.random.default_rng(56)
    print("claims_check: the series' set claims re-derived on both sets")
    check_profile("set", set_file["profile"], set_file["sentences"], ref)
    check_profile("held-out", set_file["heldout"]["profile"], set_file["heldout"]["sentences"], ref)
    parts = {"set zero": (set_file["contribution"], set_file["sentences"]),
             "set mean": (set_file["contribution_mean"], set_file["sentences"]),
             "held-out zero": (set_file["heldout"]["contribution"], set_file["heldout"]["sentences"]),
             "held-out mean": (set_file["heldout"]["contribution_mean"], set_file["heldout"]["sentences"])}
    derived = {name: check_contribution(name, part, words[name], sentences, ref, rng) for name, (part, sentences) in parts.items()}
    for where in ("set", "held-out"):
        zero, mean = derived[f"{where} zero"], derived[f"{where} mean"]
        same = int((zero["most_consequential"] == mean["most_consequential"]).sum())
        got = parts[f"{where} mean"][0]["same_most_consequential"]
        check(got == same, f"{where}: same most consequential head under both ablations {got} against {same}")
        print(f"  {where}: the most consequential head is the same under zero- and mean-ablation for {same} of {len(zero['most_consequential'])} words")
    check_pronouns("pronouns", set_file["pronouns"], os.path.join(ROOT, "web", "posts", "pronouns.tsv"), ref)
    check_pronouns("held-out pronouns", set_file["heldout"]["pronouns"], os.path.join(ROOT, "web", "posts", "pronouns_heldout.tsv"), ref)
    check_lenses("set", set_file["lenses"], lens_words["set"], set_file["sentences"], ref)
    check_lenses("held-out", set_file["heldout"]["lenses"], lens_words["held-out"], set_file["heldout"]["sentences"], ref)
    if failures:
        print(f"claims_check: {len(failures)} mismatches")
        return 1
    print("claims_check: every claim's numbers re-derived")
    return 0


if __name__ == "__main__":
    sys.exit(main())
