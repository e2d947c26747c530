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
  float64 attention.

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
from scripts.reference import reference_bert  # noqa: E402

# Counts from float64 against the f32 engine: a near-tie between two heads' ratios can fall the
# other way, so a count may differ by this many words (each difference is printed).
COUNT_TOLERANCE = 3
# Point values re-derived from the printed per-word numbers: only the JSON's rounding differs.
STATISTIC_TOLERANCE = 1e-6
# Our shuffles against the build's (both Monte Carlo, 10,000 draws each): p-values agree within this.
P_TOLERANCE = 0.02
SHUFFLES = 10000

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
    return read(f"{sha}.json"), words


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


def main():
    set_file, words = load_set()
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
    if failures:
        print(f"claims_check: {len(failures)} mismatches")
        return 1
    print("claims_check: every claim's numbers re-derived")
    return 0


if __name__ == "__main__":
    sys.exit(main())
