"""attention-cli's text output of strings from a model file (security review F7): the file's name,
provenance and tensor names reach the terminal with their control characters escaped, so a
crafted file cannot set the terminal's title, clear its screen or write its clipboard. --json
keeps the exact text.

Needs the native build (scripts/build.sh native) and fails without it (ATTN_ALLOW_SKIP=1 skips);
set ATTN_CLI to use another binary."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from helpers import ROOT, requires_input, section, small_model, with_fixed_crc
from scripts.model import modelfile

CLI = os.environ.get("ATTN_CLI", os.path.join(ROOT, "build", "native", "attention-cli"))
# OSC 0 (set the window title, ended by BEL), then CSI 2J (clear the screen) and SGR red.
HOSTILE_NAME = "evil\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31m\x7fend"
# JSON text escapes C0 controls itself, but not C1: U+009B is the one-character CSI.
HOSTILE_SOURCE = "source\u009b2J\u2028next"
# Bytes that must never reach the terminal raw: ESC, BEL, DEL, and UTF-8 for U+009B.
RAW_CONTROLS = (b"\x1b", b"\x07", b"\x7f", b"\xc2\x9b")


def run_cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, timeout=120)


@requires_input(CLI, "build it with scripts/build.sh native", executable=True)
class CliTextOutputTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="attn_cli_text_")
        self.addCleanup(shutil.rmtree, self.tmp)
        model = small_model(seed=60)
        model.name = HOSTILE_NAME
        model.provenance = json.dumps({"source": HOSTILE_SOURCE}, ensure_ascii=False)
        self.path = os.path.join(self.tmp, "hostile.attn")
        self.data = modelfile.write(self.path, model)

    def assert_no_raw_controls(self, output):
        for raw in RAW_CONTROLS:
            self.assertNotIn(raw, output)

    def test_info_escapes_the_name_and_provenance(self):
        result = run_cli("info", "--model", self.path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_no_raw_controls(result.stdout)
        self.assertIn(rb"name        evil\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31m\x7fend" + b"\n",
                      result.stdout)
        self.assertIn(rb"source\u009b2J\u2028next", result.stdout)

    def test_analyze_escapes_the_name(self):
        result = run_cli("analyze", "--model", self.path, "The cat sat.")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_no_raw_controls(result.stdout)
        self.assertIn(rb"model: evil\x1b]0;PWNED-TITLE\x07", result.stdout)

    def test_json_keeps_the_exact_text(self):
        result = run_cli("info", "--model", self.path, "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        info = json.loads(result.stdout)
        self.assertEqual(info["name"], HOSTILE_NAME)

    def test_a_refusal_quoting_a_tensor_name_escapes_it(self):
        # Tensor 0's name replaced by escapes (names are NUL-padded to 64 bytes), the CRC fixed
        # so that the loader reaches the name check and quotes the name in its message.
        buf = bytearray(self.data)
        table_offset, _ = section(buf, 3)
        name = b"\x1b]0;PWNED-BY-TENSOR-NAME\x07\x1b[2J"
        buf[table_offset:table_offset + 64] = name.ljust(64, b"\0")
        crafted = os.path.join(self.tmp, "tensor_name.attn")
        with open(crafted, "wb") as f:
            f.write(with_fixed_crc(buf))
        for command in (["info", "--model", crafted], ["analyze", "--model", crafted, "a"]):
            result = run_cli(*command)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assert_no_raw_controls(result.stderr)
            self.assertIn(rb"\x1b]0;PWNED-BY-TENSOR-NAME\x07", result.stderr)


if __name__ == "__main__":
    unittest.main()
