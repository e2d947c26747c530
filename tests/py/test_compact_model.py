"""The shipped compact model against the committed f32 model, on the fixed set of held-out
sentences (tests/fixtures/precision_sentences.txt): the fidelity bar for compact weights
(docs/ARCHITECTURE.md, "Fidelity bars") is an attention max absolute difference of at most 1e-3
over every layer, head and row.

Needs the native build and both committed model files (the compact one is made by
scripts/training/make_compact_model.sh from model_data/explainer-mini.attn); a missing one fails
the test with a message (ATTN_ALLOW_SKIP=1 skips instead)."""

import json
import os
import subprocess
import unittest

from helpers import ROOT, requires_input

CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
# Overridable to check other pairs (a checkpoint before it is committed, say).
REFERENCE = os.environ.get("ATTN_REFERENCE_MODEL",
                           os.path.join(ROOT, "model_data", "explainer-mini.attn"))
COMPACT = os.environ.get("ATTN_COMPACT_MODEL",
                         os.path.join(ROOT, "model_data", "explainer-mini.compact.attn"))
SENTENCES = os.path.join(ROOT, "tests", "fixtures", "precision_sentences.txt")
VOCAB = os.path.join(ROOT, "model_data", "vocab.txt")
# The fidelity bar for compact (shipped) weights (docs/ARCHITECTURE.md, "Fidelity bars").
ATTENTION_BAR = 1e-3


@requires_input(CLI, "build it with scripts/build.sh native", executable=True)
class CompactModelTest(unittest.TestCase):
    def test_sentence_set_is_at_least_200_held_out_sentences_of_5_to_60_tokens(self):
        with open(SENTENCES, encoding="utf-8") as f:
            sentences = [line.rstrip("\n") for line in f]
        self.assertGreaterEqual(len(sentences), 200)
        self.assertTrue(all(sentences), "a blank line in the sentence set")
        ids = subprocess.run([CLI, "tokenize", "--vocab", VOCAB, "--lines"],
                             input="\n".join(sentences) + "\n", capture_output=True, text=True,
                             check=True).stdout.splitlines()
        lengths = [len(line.split()) for line in ids]
        self.assertEqual(len(lengths), len(sentences))
        self.assertGreaterEqual(min(lengths), 5)
        self.assertLessEqual(max(lengths), 60)

    def test_compact_attention_within_the_bar_of_the_f32_model(self):
        self.assertTrue(os.path.exists(COMPACT), "model_data/explainer-mini.compact.attn is "
                        "missing; make it with scripts/training/make_compact_model.sh")
        self.assertTrue(os.path.exists(REFERENCE),
                        f"{COMPACT} has no f32 reference {REFERENCE} to be checked against")
        out = subprocess.run([CLI, "compare", "--reference", REFERENCE, "--model", COMPACT,
                              "--sentences", SENTENCES], capture_output=True, text=True,
                             timeout=600)
        self.assertEqual(out.returncode, 0, out.stderr)
        result = json.loads(out.stdout)
        print(f"\n  compact {result['file_bytes']:,} bytes ({result['precision']}) vs f32 over "
              f"{result['sentences']} sentences, {result['rows']:,} rows: attention max |diff| "
              f"{result['attention_max_abs']:.2e} (bar {ATTENTION_BAR:g}), mean "
              f"{result['attention_mean_abs']:.2e}, rollout max {result['rollout_max_abs']:.2e},"
              f" argmax changed {100 * result['argmax_changed_share']:.2f}% of rows, masked-LM "
              f"top-1 agreement {result['masked_lm_top1_agreement']}", end="")
        self.assertLess(result["file_bytes"], os.path.getsize(REFERENCE))
        self.assertLessEqual(result["attention_max_abs"], ATTENTION_BAR)


if __name__ == "__main__":
    unittest.main()
