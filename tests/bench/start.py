"""How long the `trellis` command takes to start, beside a bare pydantic + aiosqlite import in the
same run; prints JSON.

Run `python -m tests.bench.start`. Each round runs, in turn: the baseline
`python -c "import pydantic, aiosqlite"`, `trellis --version`, `trellis sessions` and
`trellis run -p hi` on the offline scripted model (every command on a temporary TRELLIS_HOME, in a
temporary empty workspace, with an empty user config). Figures are medians of the wall-clock times
of whole processes over interleaved rounds, so a busy machine slows every command alike. Bytecode
caching is switched on for the children (a user's install has its `.pyc` files), and a first
unmeasured round writes them. Targets: `sessions` <= 1.5x the baseline, `run -p` <= 2.5x,
`--version` under 150 ms. Run it with the project's virtual environment: `trellis` is the
console script beside the interpreter.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROUNDS = 15
SESSIONS_TARGET = 1.5
RUN_TARGET = 2.5
VERSION_TARGET_MS = 150.0
_TRELLIS = [str(Path(sys.executable).with_name("trellis"))]  # the console script a user runs


def commands() -> dict[str, list[str]]:
    """What each round runs, by name; `trellis` is started as its console script starts it."""
    return {
        "baseline": [sys.executable, "-c", "import pydantic, aiosqlite"],
        "version": [*_TRELLIS, "--version"],
        "sessions": [*_TRELLIS, "sessions"],
        "run": [*_TRELLIS, "run", "-p", "hi"],
    }


def timed(argv: list[str], *, cwd: Path, env: dict[str, str]) -> float:
    """Milliseconds from spawn to exit; a failing command stops the benchmark with its stderr."""
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return elapsed


def main() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "workspace"
        workspace.mkdir()
        (root / "config.toml").write_text("", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env |= {
            "TRELLIS_HOME": str(root / "home"),
            "TRELLIS_CONFIG": str(root / "config.toml"),
        }
        runs = commands()
        for argv in runs.values():  # writes the bytecode caches and the database
            timed(argv, cwd=workspace, env=env)
        timings: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(ROUNDS):
            for name, argv in runs.items():
                timings[name].append(timed(argv, cwd=workspace, env=env))
    medians = {name: statistics.median(values) for name, values in timings.items()}
    base = medians["baseline"]
    return {
        "rounds": ROUNDS,
        "baseline_ms": round(base, 1),
        "version_ms": round(medians["version"], 1),
        "sessions_ms": round(medians["sessions"], 1),
        "run_ms": round(medians["run"], 1),
        "sessions_ratio": round(medians["sessions"] / base, 2),
        "run_ratio": round(medians["run"] / base, 2),
        "targets": {
            "sessions_ratio": SESSIONS_TARGET,
            "run_ratio": RUN_TARGET,
            "version_ms": VERSION_TARGET_MS,
        },
        "met": {
            "sessions": medians["sessions"] / base <= SESSIONS_TARGET,
            "run": medians["run"] / base <= RUN_TARGET,
            "version": medians["version"] <= VERSION_TARGET_MS,
        },
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
