"""A small workspace on disk for every tools test, and the context a tool runs with in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.tools import ToolContext


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A workspace with a few text files, a secret, a binary file and a directory beside it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    (workspace / ".env").write_text("API_KEY=sk-secret\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("def main():\n    return 42\n")
    (workspace / "blob.bin").write_bytes(b"\x89PNG\x00\x01\x02" * 10)
    (tmp_path / "outside.txt").write_text("outside secret\n")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "leak.txt").write_text("leak\n")
    return workspace


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext(root=root, call_id="call-1")
