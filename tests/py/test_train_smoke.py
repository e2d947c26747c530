"""Smoke tests of scripts/training/train_default_model.py on a toy corpus with a small model: the
loss falls, a resumed run equals an uninterrupted one, and the output folder has the Hugging Face
BertForMaskedLM layout."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

from helpers import ROOT
from scripts.reference import bert_torch, reference_bert

# The training script, run as a module of the scripts package from the repository root.
SCRIPT = ["-m", "scripts.training.train_default_model"]
VOCAB = os.path.join(ROOT, "model_data", "vocab.txt")
SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
         "intermediate_size": 128, "max_position_embeddings": 64}
# The trained model in float32 against the float64 reference on the same weights.
REFERENCE_TOLERANCE = 1e-5


def write_toy_corpus(folder):
    """Documents of a few repeated sentences (bert-base-uncased ids), so that a small model can
    lower its loss within a few dozen steps."""
    sentences = [[1996, 4937, 2938, 2006, 1996, 13523, 1012],     # the cat sat on the mat .
                 [1037, 3899, 2987, 1996, 3608, 1012],            # a dog ate the food .
                 [2002, 2234, 2188, 2101, 1999, 1996, 2305, 1012]]  # he came home late in the night .
    ids, sentence_offsets, document_offsets = [], [0], [0]
    rng = np.random.default_rng(0)
    for _ in range(60):
        for _ in range(int(rng.integers(2, 6))):
            ids.extend(sentences[int(rng.integers(len(sentences)))])
            sentence_offsets.append(len(ids))
        document_offsets.append(len(sentence_offsets) - 1)
    np.save(os.path.join(folder, "train_ids.npy"), np.asarray(ids, dtype=np.uint16))
    np.save(os.path.join(folder, "train_sentences.npy"), np.asarray(sentence_offsets))
    np.save(os.path.join(folder, "train_documents.npy"), np.asarray(document_offsets))
    with open(os.path.join(folder, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump({"toy": True}, f)


def expected_names(layers):
    """Every tensor name of Hugging Face BertForMaskedLM (with pooler), written out here."""
    names = ["bert.embeddings." + n for n in (
        "word_embeddings.weight", "position_embeddings.weight", "token_type_embeddings.weight",
        "LayerNorm.weight", "LayerNorm.bias")]
    for l in range(layers):
        p = f"bert.encoder.layer.{l}."
        for n in ("attention.self.query", "attention.self.key", "attention.self.value",
                  "attention.output.dense", "intermediate.dense", "output.dense",
                  "attention.output.LayerNorm", "output.LayerNorm"):
            names += [p + n + ".weight", p + n + ".bias"]
    names += ["bert.pooler.dense.weight", "bert.pooler.dense.bias",
              "cls.predictions.bias", "cls.predictions.transform.dense.weight",
              "cls.predictions.transform.dense.bias", "cls.predictions.transform.LayerNorm.weight",
              "cls.predictions.transform.LayerNorm.bias", "cls.predictions.decoder.weight",
              "cls.predictions.decoder.bias"]
    return set(names)


class TrainSmokeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="attn_train_test_")
        cls.corpus = os.path.join(cls.tmp, "corpus")
        os.makedirs(cls.corpus)
        write_toy_corpus(cls.corpus)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def train(self, run, *extra):
        """Runs the script with a run folder inside the temp dir; returns that folder."""
        args = [sys.executable, *SCRIPT, "--runs", os.path.join(self.tmp, "runs"), "--run", run,
                "--corpus", self.corpus,
                "--model-config", json.dumps(SMALL), "--batch-size", "8", "--seq-len", "32",
                "--threads", "1", "--lr", "3e-3", "--warmup", "0.1", "--log-every", "2",
                "--device", "cpu", *extra]
        result = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=ROOT)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        return os.path.join(self.tmp, "runs", run)

    @staticmethod
    def losses(run_dir):
        with open(os.path.join(run_dir, "log.txt"), encoding="utf-8") as f:
            return [float(line.split()[1]) for line in f if not line.startswith("#")]

    def test_loss_falls(self):
        run = self.train("falls", "--schedule-steps", "40")
        losses = self.losses(run)
        print(f"\ntoy corpus loss: first window {losses[0]:.3f}, last {losses[-1]:.3f}")
        self.assertEqual(len(losses), 20)
        self.assertTrue(all(np.isfinite(losses)))
        # ln(30522) = 10.3 at the start; three repeated sentences are far easier than that.
        self.assertLess(losses[-1], losses[0] - 2.0)

    def test_resume_equals_uninterrupted_run(self):
        straight = self.train("straight", "--schedule-steps", "12")
        split = self.train("split", "--schedule-steps", "12", "--max-steps", "6")
        with open(os.path.join(split, "final", "training.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["steps"], 6)
        self.train("split", "--schedule-steps", "12", "--resume")
        a = torch.load(os.path.join(straight, "final", "pytorch_model.bin"))
        b = torch.load(os.path.join(split, "final", "pytorch_model.bin"))
        self.assertEqual(set(a), set(b))
        largest = max((a[k] - b[k]).abs().max().item() for k in a)
        print(f"\nresumed vs uninterrupted: largest weight difference {largest:g}")
        self.assertEqual(largest, 0.0)
        with open(os.path.join(split, "final", "training.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["steps"], 12)
        # The second session continued at step 6 (a fresh start would log 6 more lines), and it
        # logged the same losses as the uninterrupted run.
        with open(os.path.join(split, "log.txt"), encoding="utf-8") as f:
            self.assertIn("at step 6\n", f.read())
        self.assertEqual(self.losses(split), self.losses(straight))
        # --export writes the last checkpoint as a folder: here the same weights as the final one.
        exported = os.path.join(self.tmp, "exported")
        self.train("split", "--export", exported)
        c = torch.load(os.path.join(exported, "pytorch_model.bin"))
        self.assertTrue(all(torch.equal(b[k], c[k]) for k in b))

    def test_output_folder_has_hf_layout(self):
        run = self.train("layout", "--schedule-steps", "4")
        final = os.path.join(run, "final")
        with open(os.path.join(final, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
        self.assertEqual(config["model_type"], "bert")
        self.assertEqual(config["architectures"], ["BertForMaskedLM"])
        for key, value in SMALL.items():
            self.assertEqual(config[key], value, key)
        self.assertEqual((config["vocab_size"], config["type_vocab_size"]), (30522, 2))
        self.assertEqual(config["layer_norm_eps"], 1e-12)
        self.assertEqual(config["hidden_act"], "gelu")
        with open(os.path.join(final, "vocab.txt"), "rb") as f, open(VOCAB, "rb") as g:
            self.assertEqual(f.read(), g.read())

        state = torch.load(os.path.join(final, "pytorch_model.bin"))
        self.assertEqual(set(state), expected_names(SMALL["num_hidden_layers"]))
        d, ff = SMALL["hidden_size"], SMALL["intermediate_size"]
        self.assertEqual(tuple(state["bert.embeddings.word_embeddings.weight"].shape), (30522, d))
        self.assertEqual(tuple(state["bert.embeddings.position_embeddings.weight"].shape),
                         (SMALL["max_position_embeddings"], d))
        self.assertEqual(tuple(state["bert.encoder.layer.1.intermediate.dense.weight"].shape),
                         (ff, d))
        self.assertEqual(tuple(state["bert.encoder.layer.1.output.dense.weight"].shape), (d, ff))
        self.assertTrue(torch.equal(state["cls.predictions.decoder.weight"],
                                    state["bert.embeddings.word_embeddings.weight"]))
        self.assertTrue(torch.equal(state["cls.predictions.decoder.bias"],
                                    state["cls.predictions.bias"]))

        with open(os.path.join(final, "training.json"), encoding="utf-8") as f:
            info = json.load(f)
        self.assertEqual(info["steps"], 4)
        self.assertGreater(info["tokens_seen"], 0)
        self.assertEqual(len(info["corpus_manifest_sha256"]), 64)
        self.assertNotIn("prajjwal1/bert-mini", info["name"].replace("not prajjwal1", ""))

        # The training model's forward pass (eval mode) against the independent reference.
        model = bert_torch.load_hf_folder(final).eval()
        ids = [101, 1996, 4937, 2938, 2006, 1996, 13523, 1012, 102]
        with torch.no_grad():
            hidden, probs = model.bert(torch.tensor([ids]))
        ref_config, ref_weights = reference_bert.load_hf_folder(final)
        ref_hidden, ref_attention = reference_bert.forward(ref_config, ref_weights, ids)
        hidden_diff = np.abs(hidden[0].double().numpy() - ref_hidden[-1]).max()
        attention_diff = np.abs(torch.stack([p[0] for p in probs]).double().numpy()
                                - ref_attention).max()
        print(f"\ntraining model vs reference: hidden {hidden_diff:.2e}, "
              f"attention {attention_diff:.2e}")
        self.assertLess(hidden_diff, REFERENCE_TOLERANCE)
        self.assertLess(attention_diff, REFERENCE_TOLERANCE)


if __name__ == "__main__":
    unittest.main()
