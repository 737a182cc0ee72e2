"""The command line keeps engine diagnostics out of the reply: they go to trellis.log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import logging
from app import cli
cli._log_to_file()
try:
    raise RuntimeError("disk on fire")
except RuntimeError:
    logging.getLogger("engine.session").exception("idle flush failed; the next flush retries it")
"""


def test_diagnostics_go_to_the_log_file_not_stderr(tmp_path: Path) -> None:
    env = {**os.environ, "TRELLIS_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    assert done.stderr == ""
    log = (tmp_path / "home" / "trellis.log").read_text()
    assert "idle flush failed" in log
    assert "RuntimeError: disk on fire" in log
