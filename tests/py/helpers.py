"""Shared setup for the Python tests: small random models, the model file's header offsets, and
the rule for missing inputs.

The tools under test are the package `scripts`, imported from the repository root: run the tests
from there, `/usr/bin/python3 -m unittest discover -s tests/py` (scripts/test.sh does)."""

import os
import struct
import unicodedata
import unittest
import zlib

import torch

from scripts.reference import make_random_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The developer switch that lets tests whose inputs are missing skip instead of fail
# (scripts/README.md, "Tests"). Unset, as under scripts/test.sh and CI, a missing input fails.
ALLOW_SKIP = os.environ.get("ATTN_ALLOW_SKIP") == "1"

# Leave the second core to the other jobs on the machine.
torch.set_num_threads(1)

# Header offsets as model_data/README.md lists them, typed here rather than taken from
# scripts/model/modelfile.py, so the tests check the writer against the spec.
OFF_VERSION = 8
OFF_CONFIG = 16          # vocab, hidden, layers, heads, intermediate, positions, types: 7 x u32
OFF_EPS = 44
OFF_NUM_TENSORS = 48
OFF_SECTIONS = 56        # name, provenance, vocabulary, table, data: 5 x (u64 offset, u64 bytes)
OFF_FILE_SIZE = 136
OFF_CRC = 144
HEADER = 256
ENTRY = 128


def small_model(seed=0, layers=2, pooler=True, mlm_head=True):
    """A random model of the tiny preset (real vocabulary), 2 layers by default."""
    return make_random_model.make_model("tiny", seed, {"num_hidden_layers": layers},
                                        with_pooler=pooler, with_mlm_head=mlm_head)


def u32(buf, offset):
    return struct.unpack_from("<I", buf, offset)[0]


def u64(buf, offset):
    return struct.unpack_from("<Q", buf, offset)[0]


def section(buf, index):
    """(offset, bytes) of section index: 0 name, 1 provenance, 2 vocabulary, 3 table, 4 data."""
    return struct.unpack_from("<QQ", buf, OFF_SECTIONS + 16 * index)


def table_entries(buf):
    """[(name, dtype, shape, offset, bytes, group)] decoded at the README's entry offsets."""
    table_offset, _ = section(buf, 3)
    entries = []
    for i in range(u32(buf, OFF_NUM_TENSORS)):
        at = table_offset + i * ENTRY
        name = bytes(buf[at:at + 64]).rstrip(b"\0").decode("utf-8")
        ndim = u32(buf, at + 68)
        shape = struct.unpack_from("<4I", buf, at + 72)[:ndim]
        entries.append((name, u32(buf, at + 64), tuple(shape), u64(buf, at + 88),
                        u64(buf, at + 96), u32(buf, at + 104)))
    return entries


def with_fixed_crc(buf):
    """The bytes with the header CRC recomputed, so a test reaches the check after it."""
    buf = bytearray(buf)
    struct.pack_into("<I", buf, OFF_CRC, zlib.crc32(bytes(buf[HEADER:])) & 0xFFFFFFFF)
    return bytes(buf)


def require_input(path, how, executable=False):
    """Fails the calling test, naming `path` and `how` to make it, when `path` does not exist (or is
    not executable); with ATTN_ALLOW_SKIP=1 the test is skipped instead."""
    if os.access(path, os.X_OK) if executable else os.path.isfile(path):
        return
    message = (f"{path} is {'not built' if executable else 'missing'}: {how} "
               "(ATTN_ALLOW_SKIP=1 skips the tests that need it)")
    if ALLOW_SKIP:
        raise unittest.SkipTest(message)
    raise AssertionError(message)


def requires_input(path, how, executable=False):
    """Class decorator: every test of the class starts with require_input(path, how, executable)."""
    def decorate(cls):
        set_up = cls.setUp

        def setUp(self):
            require_input(path, how, executable)
            set_up(self)
        cls.setUp = setUp
        return cls
    return decorate


def cased_vocabulary(uncased_lines):
    """A cased WordPiece vocabulary: the uncased one, then the capitalised and upper-case forms
    of its first 12,000 alphabetic entries (as words and as ## continuations), every letter of
    Latin, Greek, Cyrillic and Hangul blocks that NFC keeps as one character (alone and as a
    continuation), and some accented words in NFC."""
    out, seen = list(uncased_lines), set(uncased_lines)

    def add(piece):
        if piece not in seen:
            seen.add(piece)
            out.append(piece)

    for entry in uncased_lines[:12000]:
        prefix, core = ("##", entry[2:]) if entry.startswith("##") else ("", entry)
        if core.isalpha():
            add(prefix + core.capitalize())
            add(prefix + core.upper())
    blocks = [range(0xC0, 0x250), range(0x370, 0x500), range(0x1E00, 0x2000), range(0xAC00, 0xAC00 + 600)]
    for cp in (c for block in blocks for c in block):
        ch = chr(cp)
        if unicodedata.category(ch).startswith("L") and unicodedata.normalize("NFC", ch) == ch:
            add(ch)
            add("##" + ch)
    for word in ["Café", "café", "naïve", "Ångström", "Zürich", "São", "résumé", "Straße", "İstanbul",
                 "Σίσυφος", "Москва", "Ёлка", "한국어", "crème", "brûlée", "Łódź", "Việt"]:
        add(unicodedata.normalize("NFC", word))
    return out
