"""The command line keeps engine diagnostics out of the reply: they go to trellis.log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import logging
from app.log_file import log_to_file
log_to_file()
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


MODELS_THEN_LOG = """
import logging
from app import cli
assert cli.main(["models"]) == 0
logging.getLogger("engine.gateway").error("endpoint answered: bad key %s", "{key}")
"""


def test_every_command_that_loads_a_config_keeps_its_secrets_out_of_the_log(
    tmp_path: Path,
) -> None:
    key = "sk-models-3e8a1f6b92"
    config = tmp_path / "config.toml"
    config.write_text(
        '[models.remote]\nprovider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "LOGGED_MODELS_KEY"\n'
    )
    env = {
        **os.environ,
        "TRELLIS_HOME": str(tmp_path / "home"),
        "TRELLIS_CONFIG": str(config),
        "LOGGED_MODELS_KEY": key,
    }
    subprocess.run(
        [sys.executable, "-c", MODELS_THEN_LOG.format(key=key)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    log = (tmp_path / "home" / "trellis.log").read_text()
    assert "endpoint answered: bad key [redacted]" in log
    assert key not in log
