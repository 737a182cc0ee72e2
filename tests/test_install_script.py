"""`bash scripts/trellis` on a fresh checkout: it says on stderr what it does while it installs,
keeps pip's own output in `.venv/install.log` (its tail on stderr when pip fails), and leaves
stdout to Trellis. A stand-in `python3` plays Python, venv and pip, so no package is fetched."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

STAND_IN = r"""#!/usr/bin/env bash
# python3, the venv's python and pip, as far as scripts/trellis uses them
case "$1" in
  -c) exit 0 ;;
  --version) echo "Python 3.11.9" ;;
  -m)
    case "$2" in
      venv)
        mkdir -p "$3/bin"
        cp "$0" "$3/bin/python"
        ;;
      pip)
        echo "Collecting textual==8.2.8 (from trellis==0.1.0)"
        echo "  Downloading textual-8.2.8-py3-none-any.whl (700 kB)"
        echo "WARNING: a warning only the log keeps" >&2
        echo "Collecting pydantic<3,>=2.7"
        if [ -n "${PIP_FAILS:-}" ]; then echo "ERROR: no matching distribution" >&2; exit 1; fi
        echo "Installing collected packages: textual, pydantic"
        if [[ " $* " == *" -e "* ]]; then  # the console script of an installed trellis
          printf '#!/bin/sh\necho "trellis ran: $*"\n' >"$(dirname "$0")/trellis"
          chmod +x "$(dirname "$0")/trellis"
        fi
        ;;
    esac
    ;;
esac
"""


@dataclass(frozen=True, slots=True)
class Checkout:
    root: Path
    path: str

    def run(self, *args: str, pip_fails: bool = False) -> subprocess.CompletedProcess[str]:
        env = {"PATH": self.path, "HOME": str(self.root)}
        if pip_fails:
            env["PIP_FAILS"] = "1"
        return subprocess.run(
            ["bash", str(self.root / "scripts" / "trellis"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "trellis", root / "scripts" / "trellis")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(STAND_IN)
    (bin_dir / "python3").chmod(0o755)
    return Checkout(root, f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_a_first_run_says_what_it_installs_and_leaves_stdout_to_trellis(
    checkout: Checkout,
) -> None:
    done = checkout.run("sessions", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "trellis ran: sessions --json\n"
    venv = checkout.root / ".venv"
    assert done.stderr.splitlines() == [
        f"trellis: first run: installing into {venv} (once, about a minute)",
        "trellis: creating the virtual environment (Python 3.11.9)",
        "trellis: updating pip",
        "  fetching textual",
        "  fetching pydantic",
        "  installing the packages",
        "trellis: installing Trellis and its dependencies",
        "  fetching textual",
        "  fetching pydantic",
        "  installing the packages",
        "trellis: installed; starting Trellis",
    ]
    assert "WARNING: a warning only the log keeps" in (venv / "install.log").read_text()
    again = checkout.run("--version")
    assert (again.returncode, again.stdout, again.stderr) == (0, "trellis ran: --version\n", "")


def test_a_failed_install_shows_pip_s_last_lines_and_is_tried_again(checkout: Checkout) -> None:
    failed = checkout.run("--version", pip_fails=True)
    assert failed.returncode == 1
    assert failed.stdout == ""
    log = checkout.root / ".venv" / "install.log"
    assert f"trellis: pip failed; its last lines (all of it is in {log}):" in failed.stderr
    assert failed.stderr.rstrip().endswith("ERROR: no matching distribution")
    retried = checkout.run("--version")
    assert retried.returncode == 0
    assert retried.stderr.startswith("trellis: first run: installing into ")
    assert retried.stdout == "trellis ran: --version\n"


def test_the_license_is_an_spdx_expression_the_build_backend_reads() -> None:
    # a TOML table is deprecated and warned about on every build; the string needs setuptools 77
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "MIT"
    assert "setuptools>=77" in project["build-system"]["requires"]
