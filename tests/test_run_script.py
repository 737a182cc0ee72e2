"""The README's command that runs Trellis, on a fresh copy of the checkout: it says what it does
while it installs (pip is silent for most of a minute), builds without setuptools' warnings, and
runs the command it was given."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from app.version import VERSION

REPO = Path(__file__).resolve().parents[1]


def fresh_copy(into: Path) -> Path:
    """The files git tracks (and those not yet committed), without .venv or caches."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in listed:
        source = REPO / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return into


@pytest.mark.slow
def test_scripts_trellis_installs_saying_so_then_runs(tmp_path: Path) -> None:
    copy = fresh_copy(tmp_path / "checkout")
    # the machine's own python3 and pip cache, as a person's shell has them
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRELLIS_", "VIRTUAL_ENV"))}
    first = subprocess.run(
        ["bash", "scripts/trellis", "--version"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"trellis {VERSION}"
    said = first.stderr.splitlines()
    assert said[0].startswith("trellis: first run: creating a virtual environment")
    assert said[1].startswith("trellis: installing Trellis")
    assert said[2].startswith("trellis: installed in ")
    log = (copy / ".venv" / "install.log").read_text()
    assert "project.license" not in log
    again = subprocess.run(
        ["bash", "scripts/trellis", "--version"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (again.returncode, again.stdout.strip(), again.stderr) == (0, f"trellis {VERSION}", "")
