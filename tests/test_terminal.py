"""Control characters from content never reach a terminal raw; pipes and JSON stay exact."""

import os
import pty
import subprocess
import sys

import orjson
from hypothesis import given
from hypothesis import strategies as st

from conftest import ROOT, write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site.build import build
from pipeline.terminal import escape_controls, escape_json, for_terminal

HOSTILE = "# Title\x1b]0;pwned\x07\n\nClear \x1b[2J\x1b[31mred\x1b[0m, CR\rover, C1 \x9b31m, bidi \u202eevil.\n"


def _has_controls(text: str) -> bool:
    return any((ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u2028" for c in text)


@given(st.text())
def test_escaped_text_has_no_controls_and_json_keeps_its_value(text):
    assert not _has_controls(escape_controls(text))
    encoded = orjson.dumps({"t": text}).decode()
    safe = escape_json(encoded)
    assert not _has_controls(safe.replace("\n", ""))
    assert orjson.loads(safe) == {"t": text}


def test_only_a_terminal_gets_escapes():
    class Tty:
        def isatty(self):
            return True

    class Pipe:
        def isatty(self):
            return False

    assert for_terminal("a\x1b[2Jb", is_json=False, stream=Pipe()) == "a\x1b[2Jb"
    assert for_terminal("a\x1b[2Jb", is_json=False, stream=Tty()) == "a\\x1b[2Jb"


def _run_on_pty(args):
    """Run the CLI with stdout on a pseudo-terminal; return what the terminal received."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", *args], stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        out += data
    proc.wait(timeout=60)
    os.close(master)
    return proc.returncode, out.decode("utf-8", "replace")


def test_sample_search_and_chunk_print_escapes_to_a_tty_and_exact_bytes_to_a_pipe(tmp_path):
    content = write_tree(tmp_path / "content", {"t/evil.md": HOSTILE})
    site = tmp_path / "site"
    build(content, site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    commands = [
        ["sample", str(site), "t", "-n", "3"],
        ["search", str(site), "red", "--method", "keyword"],
        ["chunk", str(content / "t" / "evil.md")],
        ["sample", str(site), "t", "--json"],
    ]
    for args in commands:
        code, shown = _run_on_pty(args)
        assert code == 0, shown
        assert "\x1b" not in shown and "\x9b" not in shown and "\u202e" not in shown, (args, shown)
    code, shown = _run_on_pty(["sample", str(site), "t"])
    assert "\\x1b[2J" in shown  # escaped, not dropped: the reader sees what is there
    piped = subprocess.run([sys.executable, "-m", "pipeline", "sample", str(site), "t", "--json"], capture_output=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert orjson.loads(piped.stdout)[0]["text"] == (site / "t" / "_chunks" / "evil-0.md").read_bytes().decode("utf-8")
