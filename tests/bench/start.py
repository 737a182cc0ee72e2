"""How long the `trellis` command takes to start, beside a bare pydantic + aiosqlite import in the
same run; prints JSON.

Run `python -m tests.bench.start`. Each round runs, in turn: the baseline
`python -c "import pydantic, aiosqlite"`, `trellis --version`, `trellis --help` (the parser
built, no command run), `trellis sessions` and `trellis run -p hi` on the offline scripted model (every command on a temporary TRELLIS_HOME, in a
temporary empty workspace, with an empty user config). Figures are medians over interleaved rounds
of whole processes, so a busy machine slows every command alike: the wall-clock time, and beside it
the CPU time (user + system) the process used, which other engineers' work on a shared machine
disturbs far less. Each figure is printed with the baseline's and the ratio to it. Bytecode
caching is switched on for the children (a user's install has its `.pyc` files), and a first
unmeasured round writes them. Targets: `sessions` <= 1.5x the baseline, `run -p` <= 2.5x,
`--version` under 150 ms. Run it with the project's virtual environment: `trellis` is the
console script beside the interpreter (in a development checkout, an editable install).

`--before DIR` adds each `trellis` command started from another source tree (`git archive` of an
earlier commit unpacked in DIR, put first on `PYTHONPATH`), measured in the same rounds, so a change
is judged before and after in one run (under `before`, each figure beside the baseline's).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROUNDS = 15
SESSIONS_TARGET = 1.5
RUN_TARGET = 2.5
VERSION_TARGET_MS = 150.0
_TRELLIS = [str(Path(sys.executable).with_name("trellis"))]  # the console script a user runs
TRELLIS_COMMANDS = ("version", "help", "sessions", "run")


def commands() -> dict[str, list[str]]:
    """What each round runs, by name; `trellis` is started as its console script starts it."""
    return {
        "baseline": [sys.executable, "-c", "import pydantic, aiosqlite"],
        "version": [*_TRELLIS, "--version"],
        "help": [*_TRELLIS, "--help"],
        "sessions": [*_TRELLIS, "sessions"],
        "run": [*_TRELLIS, "run", "-p", "hi"],
    }


@dataclass(frozen=True, slots=True)
class Timing:
    wall_ms: float
    cpu_ms: float  # user + system time of the process


def timed(argv: list[str], *, cwd: Path, env: dict[str, str]) -> Timing:
    """One whole process, spawn to exit; a failing command stops the benchmark with its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return Timing(wall, cpu)


def figures(name: str, timings: dict[str, list[Timing]]) -> dict[str, float]:
    """A command's medians beside the baseline's, and the ratios to them."""
    wall = statistics.median(t.wall_ms for t in timings[name])
    cpu = statistics.median(t.cpu_ms for t in timings[name])
    base_wall = statistics.median(t.wall_ms for t in timings["baseline"])
    base_cpu = statistics.median(t.cpu_ms for t in timings["baseline"])
    return {
        "wall_ms": round(wall, 1),
        "baseline_wall_ms": round(base_wall, 1),
        "wall_ratio": round(wall / base_wall, 2),
        "cpu_ms": round(cpu, 1),
        "baseline_cpu_ms": round(base_cpu, 1),
        "cpu_ratio": round(cpu / base_cpu, 2),
    }


def main(before: Path | None = None) -> dict[str, Any]:
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
        runs = {name: (argv, env) for name, argv in commands().items()}
        if before is not None:
            # its own data directory: the two trees may write different schema versions
            earlier = env | {
                "PYTHONPATH": str(before.resolve()),
                "TRELLIS_HOME": str(root / "home-before"),
            }
            for name in TRELLIS_COMMANDS:
                runs[f"{name}_before"] = (runs[name][0], earlier)
        for argv, with_env in runs.values():  # writes the bytecode caches and the database
            timed(argv, cwd=workspace, env=with_env)
        timings: dict[str, list[Timing]] = {name: [] for name in runs}
        for _ in range(ROUNDS):
            for name, (argv, with_env) in runs.items():
                timings[name].append(timed(argv, cwd=workspace, env=with_env))
    version, sessions, run = (figures(name, timings) for name in ("version", "sessions", "run"))
    before_figures: dict[str, Any] = (
        {"before": {name: figures(f"{name}_before", timings) for name in TRELLIS_COMMANDS}}
        if before is not None
        else {}
    )
    return {
        "rounds": ROUNDS,
        "version": version,
        "help": figures("help", timings),
        "sessions": sessions,
        "run": run,
        **before_figures,
        "targets": {
            "sessions_ratio": SESSIONS_TARGET,
            "run_ratio": RUN_TARGET,
            "version_ms": VERSION_TARGET_MS,
        },
        "met": {
            "sessions": sessions["wall_ratio"] <= SESSIONS_TARGET,
            "sessions_cpu": sessions["cpu_ratio"] <= SESSIONS_TARGET,
            "run": run["wall_ratio"] <= RUN_TARGET,
            "run_cpu": run["cpu_ratio"] <= RUN_TARGET,
            "version": version["wall_ms"] <= VERSION_TARGET_MS,
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tests.bench.start")
    parser.add_argument("--before", type=Path, metavar="DIR", help="an earlier source tree")
    print(json.dumps(main(parser.parse_args().before), indent=2))
