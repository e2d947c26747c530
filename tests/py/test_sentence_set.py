"""`attention-cli profile`, `contribution` and `lens-set` (the series' set statistics) against
independent code: the float64 reference BERT (scripts/reference/reference_bert.py) with its own
masked-LM head written out here, the independent tokenizer (tests/py/bert_reference.py) for
words, pieces and punctuation, and every summary statistic, bootstrap interval, label
stability and permutation p-value re-derived here from the per-word and per-sentence numbers
the CLI prints; lens-set's per-target rank correlations against the float64 lenses
(scripts/reference/lenses_reference.py). The generator is re-implemented from splitmix64's definition, so the resamples
are the same draws and the intervals must agree to rounding.

Needs the native build (scripts/build.sh native) and fails without it (ATTN_ALLOW_SKIP=1 skips)."""

import json
import math
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import torch

from bert_reference import BertReference, basic_tokenize, is_punctuation
from helpers import ROOT, requires_input, small_model
from scripts.model import modelfile
from scripts.reference import lenses_reference, reference_bert

CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
# The fp32 bars (docs/ARCHITECTURE.md, "Fidelity bars"): a float32 engine against float64.
ATTENTION_TOLERANCE = 1e-5
PROBABILITY_TOLERANCE = 1e-5
# A random model's predictions are nearly uniform (p about 1 / 30,522), where 1e-5 absolute says
# little; so log-probabilities are held to a bar too.
LOG_PROBABILITY_TOLERANCE = 1e-4
# Statistics re-derived from the printed numbers: only the JSON's rounding differs.
STATISTIC_TOLERANCE = 1e-7
# lens-set's rank correlations against the float64 lenses (tests/py/test_lenses.py's bar).
RHO_TOLERANCE = 1e-3
MASK_ID = 103
RESAMPLES = 200
PERMUTATIONS = 500
SENTENCES = [
    "The cat sat on the mat because it was warm.",
    "Unbelievably, the embeddings were tokenized into wordpieces!",
    "She gave him the book, and he read it twice.",
    "Rain.",
    "When the bell rang, the children ran out into the yard.",
    "Birds gathered on the wire as the evening grew colder.",
]


class SplitMix64:
    """The generator of wasm/core/statistics.h, from the algorithm's definition."""

    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.state = seed

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def below(self, n):
        limit = self.MASK - self.MASK % n
        while True:
            draw = self.next()
            if draw < limit:
                return draw % n


def resamples(clusters, count, seed):
    rng = SplitMix64(seed)
    return [[rng.below(clusters) for _ in range(clusters)] for _ in range(count)]


def interval(values, level):
    values = [v for v in values if math.isfinite(v)]
    return np.percentile(values, [50 * (1 - level), 50 * (1 + level)]) if values else [math.nan, math.nan]


def average_ranks(values):
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start:end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(x, y):
    if len(x) < 2:
        return math.nan
    rx, ry = average_ranks(x), average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = math.sqrt((rx * rx).sum() * (ry * ry).sum())
    return float((rx * ry).sum() / denominator) if denominator > 0 else math.nan


def nanmean(values):
    values = [v for v in values if math.isfinite(v)]
    return sum(values) / len(values) if values else math.nan


def reference_words(tokenizer, text):
    """[(piece ids, is punctuation)] for each basic-tokenizer word of text, in order."""
    from bert_reference import lowercase_like_transformers
    out = []
    for word in basic_tokenize(lowercase_like_transformers(text)):
        out.append((tokenizer.wordpiece(word), all(is_punctuation(c) for c in word)))
    return out


def masked_lm_probabilities(weights, config, hidden):
    """Softmax over the vocabulary of the masked-LM head at one hidden state (float64)."""
    eps = float(config["layer_norm_eps"])
    t = reference_bert.gelu(reference_bert.linear(hidden, weights["cls.predictions.transform.dense.weight"],
                                                  weights["cls.predictions.transform.dense.bias"]))
    t = reference_bert.layer_norm(t, weights["cls.predictions.transform.LayerNorm.weight"],
                                  weights["cls.predictions.transform.LayerNorm.bias"], eps)
    logits = t @ weights["embeddings.word_embeddings.weight"].T + weights["cls.predictions.bias"]
    return torch.softmax(logits, dim=-1).numpy()


def head_counts(attention, roles):
    """Per head (layer-major), the profile's counts of one sentence from its attention (L, H, n, n)
    and its tokens' roles ('special', 'punctuation', 'ordinary'), from the definitions in
    docs/ARCHITECTURE.md; and the smallest gap between a row's two largest weights."""
    layers, heads = attention.shape[:2]
    n = len(roles)
    out, smallest_gap = [], math.inf
    for layer in range(layers):
        for head in range(heads):
            c = {k: 0 for k in ("rows", "previous_token", "next_token", "cls", "sep", "self", "punctuation",
                                "word_rows", "word_rows_with_previous", "word_previous", "word_rows_with_next",
                                "word_next", "target_special", "target_self", "target_previous", "target_next",
                                "target_punctuation", "target_other")}
            entropy = 0.0
            for i in range(n):
                row = attention[layer, head, i]
                j = int(np.argmax(row))
                smallest_gap = min(smallest_gap, row[j] - np.partition(row, -2)[-2] if n > 1 else math.inf)
                c["rows"] += 1
                c["previous_token"] += j == i - 1
                c["next_token"] += j == i + 1
                c["cls"] += j == 0
                c["sep"] += j == n - 1
                c["self"] += j == i
                c["punctuation"] += roles[j] == "punctuation"
                has_previous = i >= 2
                has_next = i + 2 <= n - 1
                if roles[i] == "ordinary":
                    c["word_rows"] += 1
                    c["word_rows_with_previous"] += has_previous
                    c["word_previous"] += has_previous and j == i - 1
                    c["word_rows_with_next"] += has_next
                    c["word_next"] += has_next and j == i + 1
                target = ("target_special" if roles[j] == "special" else "target_self" if j == i
                          else "target_previous" if j == i - 1 else "target_next" if j == i + 1
                          else "target_punctuation" if roles[j] == "punctuation" else "target_other")
                c[target] += 1
                p = row[row > 0]
                entropy += float(-(p * np.log(p)).sum()) / (math.log(n) if n > 1 else 1)
            c["normalized_entropy_sum"] = entropy
            out.append(c)
    return out, smallest_gap


def summarize_words(words, chosen, heads, predicted_rank):
    """The contribution summary's statistics over the words listed in `chosen` (indices, repeats
    allowed), from the definitions in docs/ARCHITECTURE.md."""
    rows = [words[i] for i in chosen]
    if not rows:
        return None
    attention = np.array([w["attention"] for w in rows])
    effect = np.array([[abs(p - w["p_full"]) for p in w["p_removed"]] for w in rows])
    log_effect = np.array([[abs(math.log(max(p, 2.2250738585072014e-308))
                                - math.log(max(w["p_full"], 2.2250738585072014e-308)))
                            for p in w["p_removed"]] for w in rows])
    most_attending = attention.argmax(axis=1)
    most_consequential = effect.argmax(axis=1)
    mean_attention = attention.mean(axis=0)
    rho, constant = [], []
    for a, e in zip(attention, effect):
        r = spearman(a, e)
        if math.isfinite(r):
            rho.append(r)
            constant.append(spearman(mean_attention, e))
    predicted = np.array([w["rank_full"] <= predicted_rank for w in rows])
    survived = np.array([[t == w["top1_full"] for t in w["top1_removed"]] for w in rows])
    group = lambda values, mask: float(values[mask].mean()) if mask.any() else math.nan
    return {
        "agreement_share": float((most_attending == most_consequential).mean()),
        "rho_per_word": nanmean(rho), "rho_constant_attention": nanmean(constant),
        "rho_beyond_head": nanmean([a - b for a, b in zip(rho, constant)]),
        "within_rho": nanmean([spearman(attention[:, k], effect[:, k]) for k in range(heads)]),
        "within_rho_log": nanmean([spearman(attention[:, k], log_effect[:, k]) for k in range(heads)]),
        "top1_survival": float(survived.mean()),
        "predicted_effect": group(effect, predicted), "predicted_log_effect": group(log_effect, predicted),
        "unpredicted_effect": group(effect, ~predicted), "unpredicted_log_effect": group(log_effect, ~predicted),
        "most_attending": most_attending, "most_consequential": most_consequential,
    }


@requires_input(CLI, "build it with scripts/build.sh native", executable=True)
class SentenceSetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="attn_sentence_set_")
        cls.model_path = os.path.join(cls.tmp, "model.attn")
        modelfile.write(cls.model_path, small_model(seed=61))
        decoded = modelfile.read(cls.model_path)
        cls.config = dict(decoded.config.__dict__)
        cls.weights = {k: torch.from_numpy(v).to(torch.float64) for k, v in decoded.tensors.items()}
        cls.layers = cls.config["num_hidden_layers"]
        cls.heads = cls.config["num_attention_heads"]
        with open(os.path.join(ROOT, "model_data", "vocab.txt"), encoding="utf-8") as f:
            cls.tokenizer = BertReference(f.read().split("\n")[:-1])
        cls.sentences_path = os.path.join(cls.tmp, "sentences.txt")
        with open(cls.sentences_path, "w", encoding="utf-8") as f:
            f.write("\n".join(SENTENCES) + "\n")
        common = ["--model", cls.model_path, "--sentences", cls.sentences_path, "--json",
                  "--resamples", str(RESAMPLES)]
        cls.profile = cls.run_cli(["profile", *common, "--per-sentence"])
        cls.contribution = cls.run_cli(["contribution", *common, "--permutations", str(PERMUTATIONS)])
        cls.lens_set = cls.run_cli(["lens-set", *common])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    @classmethod
    def run_cli(cls, args):
        result = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise AssertionError(f"attention-cli {args[0]} failed: {result.stderr}")
        return json.loads(result.stdout)

    def forward(self, ids, removed=None):
        return reference_bert.forward(self.config, self.weights, ids, removed=removed)

    # ---- profile ----

    def reference_counts(self, text):
        """Per head, the profile's counts from the reference attention of text."""
        words = reference_words(self.tokenizer, text)
        ids = [reference_bert.CLS_ID] + [i for pieces, _ in words for i in pieces] + [reference_bert.SEP_ID]
        roles = ["special"] + [("punctuation" if punct else "ordinary") for pieces, punct in words
                               for _ in pieces] + ["special"]
        _, attention = self.forward(ids)
        return head_counts(attention, roles)

    def test_profile_counts_match_the_reference(self):
        per_sentence = self.profile["per_sentence"]
        self.assertEqual(len(per_sentence), len(SENTENCES))
        worst_entropy, gaps = 0.0, []
        for s, text in enumerate(SENTENCES):
            want, gap = self.reference_counts(text)
            gaps.append(gap)
            for k, (w, got) in enumerate(zip(want, per_sentence[s])):
                for name, value in w.items():
                    if name == "normalized_entropy_sum":
                        worst_entropy = max(worst_entropy, abs(value - got[name]))
                    else:
                        self.assertEqual(got[name], value, f"sentence {s + 1}, head {k}, {name}")
        print(f"\n  profile: per-sentence counts equal the reference's over {len(SENTENCES)} sentences "
              f"(closest top-2 gap {min(gaps):.1e}); normalised entropy sums within {worst_entropy:.1e}", end="")
        self.assertLess(worst_entropy, 1e-4)

    def label(self, c, rule):
        """The label rule of docs/ARCHITECTURE.md, written again from its text."""
        if c["rows"] == 0:
            return "mixed"
        if c["normalized_entropy_sum"] / c["rows"] >= rule["broad_normalized_entropy"]:
            return "broad"
        candidates = [("previous-token", c["previous_token"]), ("next-token", c["next_token"]),
                      ("[CLS]/[SEP] sink", c["cls"] + c["sep"]), ("self", c["self"]),
                      ("punctuation", c["punctuation"])]
        best = max(candidates, key=lambda item: item[1])  # max keeps the first of equals
        return best[0] if best[1] / c["rows"] >= rule["label_fraction"] else "mixed"

    def test_profile_labels_intervals_and_stability_rederived(self):
        p = self.profile
        per_sentence = p["per_sentence"]
        draws = resamples(len(per_sentence), RESAMPLES, p["bootstrap"]["seed"])
        level = p["bootstrap"]["level"]
        shares = {"word_previous": ("word_previous", "word_rows_with_previous"),
                  "word_next": ("word_next", "word_rows_with_next"),
                  "target_special": ("target_special", "rows"), "previous_token": ("previous_token", "rows")}
        worst = 0.0
        for k, head in enumerate(p["heads"]):
            total = {name: sum(s[k][name] for s in per_sentence) for name in per_sentence[0][k]}
            self.assertEqual(head["label"], self.label(total, p["label_rule"]), f"head {k}")
            partition = sum(total[name] for name in total if name.startswith("target_"))
            self.assertEqual(partition, total["rows"])
            labels, resampled = [], {name: [] for name in shares}
            for draw in draws:
                summed = {name: sum(per_sentence[s][k][name] for s in draw) for name in total}
                labels.append(self.label(summed, p["label_rule"]))
                for name, (num, den) in shares.items():
                    resampled[name].append(summed[num] / summed[den] if summed[den] else math.nan)
            stability = labels.count(head["label"]) / len(labels)
            self.assertAlmostEqual(head["label_stability"], stability, places=5)
            self.assertEqual(head["borderline"], stability < p["label_rule"]["stable_label"])
            for name, (num, den) in shares.items():
                got = head["shares"][name]
                self.assertEqual((got["numerator"], got["denominator"]), (total[num], total[den]))
                low, high = interval(resampled[name], level)
                for a, b in ((got["estimate"]["low"], low), (got["estimate"]["high"], high)):
                    worst = max(worst, abs(a - b))
        print(f"\n  profile: labels, stabilities and {RESAMPLES}-resample intervals re-derived; "
              f"largest interval difference {worst:.1e}", end="")
        self.assertLess(worst, STATISTIC_TOLERANCE)

    # ---- contribution ----

    def test_contribution_words_match_the_reference(self):
        words = self.contribution["words"]
        want_words = []
        for s, text in enumerate(SENTENCES):
            pieces = reference_words(self.tokenizer, text)
            ids = [reference_bert.CLS_ID] + [i for p, _ in pieces for i in p] + [reference_bert.SEP_ID]
            position = 1
            for word_pieces, punct in pieces:
                if len(word_pieces) == 1 and not punct:
                    want_words.append((s, position, ids))
                position += len(word_pieces)
        self.assertEqual([(w["sentence"], w["token"]) for w in words], [(s, t) for s, t, _ in want_words])
        worst_p = worst_log_p = worst_attention = 0.0
        for w, (s, token, ids) in zip(words, want_words):
            self.assertEqual(w["id"], ids[token])
            masked = list(ids)
            masked[token] = MASK_ID
            hidden, attention = self.forward(masked)
            probabilities = masked_lm_probabilities(self.weights, self.config, torch.from_numpy(hidden[-1][token]))
            worst_p = max(worst_p, abs(w["p_full"] - probabilities[w["id"]]))
            worst_log_p = max(worst_log_p, abs(math.log(w["p_full"]) - math.log(probabilities[w["id"]])))
            self.assertEqual(w["rank_full"], 1 + int((probabilities > probabilities[w["id"]]).sum()))
            self.assertEqual(w["top1_full"], int(np.argmax(probabilities)))
            want_attention = attention[:, :, token, :].max(axis=-1).reshape(-1)
            worst_attention = max(worst_attention, float(np.abs(np.array(w["attention"]) - want_attention).max()))
            for k in range(self.layers * self.heads):
                removed = [[int(l * self.heads + h == k) for h in range(self.heads)] for l in range(self.layers)]
                hidden_removed, _ = self.forward(masked, removed)
                p = masked_lm_probabilities(self.weights, self.config, torch.from_numpy(hidden_removed[-1][token]))
                worst_p = max(worst_p, abs(w["p_removed"][k] - p[w["id"]]))
                worst_log_p = max(worst_log_p, abs(math.log(w["p_removed"][k]) - math.log(p[w["id"]])))
                self.assertEqual(w["top1_removed"][k], int(np.argmax(p)))
        print(f"\n  contribution: {len(words)} words x {self.layers * self.heads + 1} passes against the float64 "
              f"reference: p within {worst_p:.1e} (log p within {worst_log_p:.1e}), attention within "
              f"{worst_attention:.1e}", end="")
        self.assertLessEqual(worst_p, PROBABILITY_TOLERANCE)
        self.assertLessEqual(worst_log_p, LOG_PROBABILITY_TOLERANCE)
        self.assertLessEqual(worst_attention, ATTENTION_TOLERANCE)

    def summarize(self, words, chosen, heads):
        return summarize_words(words, chosen, heads, self.contribution["predicted_rank"])

    def test_contribution_summary_rederived(self):
        c = self.contribution
        words, summary, heads = c["words"], c["summary"], c["heads"]
        full = self.summarize(words, range(len(words)), heads)
        a, b = full["most_attending"], full["most_consequential"]
        agreement = summary["agreement"]
        self.assertEqual(agreement["observed"], int((a == b).sum()))
        expected = sum(int((a == k).sum()) * int((b == k).sum()) for k in range(heads)) / len(words)
        self.assertAlmostEqual(agreement["expected"], expected, places=6)
        self.assertEqual(agreement["distinct_attending"], len(set(a.tolist())))
        self.assertEqual(agreement["distinct_consequential"], len(set(b.tolist())))
        # The permutation null: Fisher-Yates shuffles of b with the same generator.
        rng, shuffled, hits = SplitMix64(c["bootstrap"]["seed"]), list(b), 0
        for _ in range(c["permutations"]):
            for i in range(len(shuffled) - 1, 0, -1):
                j = rng.below(i + 1)
                shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
            hits += sum(int(x == y) for x, y in zip(a, shuffled)) >= agreement["observed"]
        self.assertAlmostEqual(agreement["p_value"], (hits + 1) / (c["permutations"] + 1), places=5)
        self.assertEqual(summary["top1_correct"], sum(w["top1_full"] == w["id"] for w in words))
        self.assertEqual(summary["predicted"]["words"], sum(w["rank_full"] <= c["predicted_rank"] for w in words))

        by_sentence = [[i for i, w in enumerate(words) if w["sentence"] == s] for s in range(c["sentences"])]
        draws = resamples(c["sentences"], RESAMPLES, c["bootstrap"]["seed"])
        resampled = [self.summarize(words, [i for s in draw for i in by_sentence[s]], heads) for draw in draws]
        pairs = {"agreement_share": summary["agreement"]["share"], "rho_per_word": summary["rho_per_word"],
                 "rho_constant_attention": summary["rho_constant_attention"],
                 "rho_beyond_head": summary["rho_beyond_head"], "within_rho": summary["within_rho"],
                 "within_rho_log": summary["within_rho_log"], "top1_survival": summary["top1_survival"],
                 "predicted_effect": summary["predicted"]["mean_abs_effect"],
                 "predicted_log_effect": summary["predicted"]["mean_abs_log_effect"],
                 "unpredicted_effect": summary["unpredicted"]["mean_abs_effect"],
                 "unpredicted_log_effect": summary["unpredicted"]["mean_abs_log_effect"]}
        worst = 0.0
        for name, got in pairs.items():
            values = [r[name] for r in resampled if r is not None]
            low, high = interval(values, c["bootstrap"]["level"])
            for x, y in ((got["value"], full[name]), (got["low"], low), (got["high"], high)):
                if math.isnan(y):
                    self.assertIsNone(x, name)
                    continue
                worst = max(worst, abs(x - y))
        for k, head in enumerate(summary["per_head"]):
            self.assertEqual(head["most_attending"], int((a == k).sum()))
            self.assertEqual(head["most_consequential"], int((b == k).sum()))
        print(f"\n  contribution summary: {len(pairs)} statistics and their {RESAMPLES}-resample intervals, the "
              f"agreement ({agreement['observed']} observed, {expected:.2f} expected, p = {agreement['p_value']:.3f}) "
              f"re-derived; largest difference {worst:.1e}", end="")
        self.assertLess(worst, STATISTIC_TOLERANCE)

    def test_bad_inputs_are_refused_with_a_message(self):
        empty = os.path.join(self.tmp, "empty.txt")
        with open(empty, "w") as f:
            f.write("\n\n")
        for command in ("profile", "contribution", "lens-set"):
            result = subprocess.run([CLI, command, "--model", self.model_path, "--sentences", empty, "--json"],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 1)
            self.assertIn("has no sentences", result.stderr)
            result = subprocess.run([CLI, command, "--model", self.model_path, "--json"],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 2)
            self.assertIn("--sentences FILE is missing", result.stderr)
            result = subprocess.run([CLI, command, "--model", self.model_path, "--sentences", empty, "--json",
                                     "--resamples", "x"], capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 2)
            self.assertIn("--resamples needs a whole number", result.stderr)

    def test_contribution_is_the_same_on_any_number_of_threads(self):
        # The class's run used the default (one thread per core); one thread and more threads
        # than sentences give the same words, value for value, in the same order.
        common = ["--model", self.model_path, "--sentences", self.sentences_path, "--json",
                  "--resamples", str(RESAMPLES), "--permutations", str(PERMUTATIONS)]
        for threads in ("1", str(len(SENTENCES) + 2)):
            other = self.run_cli(["contribution", *common, "--threads", threads])
            self.assertEqual(other, self.contribution, f"--threads {threads} changed the result")
        result = subprocess.run([CLI, "contribution", *common, "--threads", "0"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 2)
        self.assertIn("--threads needs a whole number from 1 to 64", result.stderr)

    def test_lens_set_targets_match_the_float64_lenses(self):
        # Every whole word is a target; its five lenses' rank correlations with occlusion and the
        # position-only baseline's, from the float64 lenses; the summary's means and undefined
        # counts from the targets. "Rain." leaves one token to hide: every rho is undefined.
        out = self.lens_set
        names = out["lenses"]
        targets = out["targets"]
        want = []
        for s, text in enumerate(SENTENCES):
            words = reference_words(self.tokenizer, text)
            ids = [reference_bert.CLS_ID] + [i for pieces, _ in words for i in pieces] + [reference_bert.SEP_ID]
            position = 1
            for pieces, punct in words:
                if len(pieces) == 1 and not punct:
                    want.append((s, position, ids))
                position += len(pieces)
        self.assertEqual([(t["sentence"], t["token"]) for t in targets], [(s, t) for s, t, _ in want])
        worst = 0.0
        undefined = [0] * len(names)
        for t, (s, token, ids) in zip(targets, want):
            masked = list(ids)
            masked[token] = MASK_ID
            ref = lenses_reference.lenses(self.config, self.weights, masked, target=token, flow_rows=[token])
            occluded = [j for j in range(len(ids)) if not math.isnan(ref["occlusion"][j])]
            self.assertEqual(t["positions"], len(occluded))
            self.assertEqual(t["top1"], ref["target_top1"])
            mine = [ref["faithfulness"][name] for name in names[:-1]]
            mine.append(lenses_reference.spearman(ref["occlusion"][occluded], [-abs(j - token) for j in occluded]))
            for k, (got, expected) in enumerate(zip(t["rho"], mine)):
                if expected is None:
                    self.assertIsNone(got, f"sentence {s + 1}, token {token}, {names[k]}")
                    undefined[k] += 1
                    continue
                self.assertIsNotNone(got, f"sentence {s + 1}, token {token}, {names[k]}")
                worst = max(worst, abs(got - expected))
        self.assertGreater(min(undefined), 0, "no undefined correlation: \"Rain.\" should give one")
        summary = out["summary"]
        for k, name in enumerate(names):
            rhos = [t["rho"][k] for t in targets if t["rho"][k] is not None]
            self.assertEqual(summary["faithfulness"][name]["undefined"], undefined[k], name)
            self.assertEqual(summary["faithfulness"][name]["defined"], len(rhos), name)
            self.assertAlmostEqual(summary["faithfulness"][name]["mean_rho"]["value"], sum(rhos) / len(rhos), places=7)
        print(f"\n  lens-set: {len(targets)} targets' rank correlations within {worst:.1e} of the float64 lenses; "
              f"undefined {undefined}", end="")
        self.assertLessEqual(worst, RHO_TOLERANCE)

    def test_lens_set_is_the_same_on_any_number_of_threads(self):
        common = ["--model", self.model_path, "--sentences", self.sentences_path, "--json", "--resamples", str(RESAMPLES)]
        for threads in ("1", str(len(SENTENCES) + 2)):
            self.assertEqual(self.run_cli(["lens-set", *common, "--threads", threads]), self.lens_set, f"--threads {threads} changed the result")


if __name__ == "__main__":
    unittest.main()
