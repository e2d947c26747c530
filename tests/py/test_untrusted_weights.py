"""A pytorch_model.bin is a pickle, and a full unpickle runs any code the file names (security
review F8). The loader that training and evaluation use for Hugging Face folders
(scripts/reference/bert_torch.load_hf_folder) must refuse such a file without running it, as the
converter already does."""

import json
import os
import pickle
import shutil
import tempfile
import unittest

import torch

from scripts.reference import bert_torch


class CreatesAFile:
    """Unpickled, calls open(path, "w"): the file's existence shows that the pickle ran."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


class UntrustedWeightsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="attn_pickle_")
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_load_hf_folder_refuses_a_pickle_that_runs_code(self):
        folder = os.path.join(self.tmp, "hf")
        os.makedirs(folder)
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
            json.dump(bert_torch.hf_config(bert_torch.DEFAULT_CONFIG), f)
        marker = os.path.join(self.tmp, "pickle-ran.txt")
        torch.save({"bert.embeddings.word_embeddings.weight": CreatesAFile(marker)},
                   os.path.join(folder, "pytorch_model.bin"))
        with self.assertRaises(Exception) as refused:
            bert_torch.load_hf_folder(folder)
        self.assertFalse(os.path.exists(marker), "loading the folder ran the pickle's code")
        self.assertIsInstance(refused.exception, pickle.UnpicklingError)


if __name__ == "__main__":
    unittest.main()
