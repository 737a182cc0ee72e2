"""Benchmark: reopening a long stored session as an Agent, in memory and in time.

Run `python -m tests.bench.reopen [TURNS]`; prints JSON. The session is the replay benchmark's
(`tests.bench.replay.session`: a tool call per turn, injected notes, Areas rendered and collected),
10,000 turns (about 111,000 events) by default, written to a `SQLiteStore` in a temp directory.

- Memory (target: at most 100 MB): each round starts a fresh interpreter that imports what
  reopening uses, collects, reads its resident set (the baseline: a bare interpreter that imported
  the same modules), then reopens the session as an Agent with `open_agent` and reads it again.
  The figure is the difference; the peak (`VmHWM`) above the baseline is printed beside it.
- Time (target: at most 2x): in one process, interleaved rounds of the store's own `load` of the
  session (then `release`) and `open_agent` on it (then `aclose`), medians.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MEMORY_TARGET_MB = 100.0
TIME_TARGET = 2.0
TURNS = 10_000
ROUNDS = 3


def resident_mb(field: str = "VmRSS") -> float:
    """This process's resident set now (`VmHWM`: its peak), in MB, from Linux's
    `/proc/self/status` (`ru_maxrss` would count the parent's resident set at the fork)."""
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024 / 1e6
    raise SystemExit(f"no {field} in /proc/self/status: this benchmark needs Linux")


async def _write(path: Path, workspace: Path, turns: int) -> tuple[str, int]:
    from engine.store.sqlite.store import SQLiteStore
    from tests.bench.replay import session

    events = session(turns)
    async with SQLiteStore(path) as store:
        info = await store.create(cwd=str(workspace))
        for start in range(0, len(events), 5_000):
            await store.append(info.id, events[start : start + 5_000])
            await store.flush(info.id)
    return info.id, len(events)


async def _reopen(path: Path, workspace: Path, session_id: str) -> None:
    from engine.agent import open_agent
    from engine.config import Config
    from engine.store.sqlite.store import SQLiteStore

    async with SQLiteStore(path) as store:
        agent = await open_agent(config=Config(), cwd=workspace, store=store, session_id=session_id)
        gc.collect()
        reopened = resident_mb()
        await agent.aclose()
        print(json.dumps({"reopened_mb": reopened}))


def _child(path: Path, workspace: Path, session_id: str) -> dict[str, float]:
    """Run one memory round in a fresh interpreter; returns its figures."""
    code = (
        "import asyncio, gc, json\n"
        "import engine.agent, engine.config, engine.store.sqlite.store\n"
        "from tests.bench.reopen import _reopen, resident_mb\n"
        "from pathlib import Path\n"
        "gc.collect()\n"
        "print(json.dumps({'baseline_mb': resident_mb()}))\n"
        f"asyncio.run(_reopen(Path({str(path)!r}), Path({str(workspace)!r}), {session_id!r}))\n"
        "print(json.dumps({'peak_mb': resident_mb('VmHWM')}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the reopening child failed: {done.stderr.strip()}")
    figures: dict[str, float] = {}
    for line in done.stdout.splitlines():
        figures |= json.loads(line)
    return figures


async def _timed(path: Path, workspace: Path, session_id: str, rounds: int) -> dict[str, Any]:
    from engine.agent import open_agent
    from engine.config import Config
    from engine.store.sqlite.store import SQLiteStore

    loads: list[float] = []
    reopens: list[float] = []
    async with SQLiteStore(path) as store:
        for number in range(rounds):
            for kind in ("load", "reopen") if number % 2 == 0 else ("reopen", "load"):
                gc.collect()
                started = time.perf_counter()
                if kind == "load":
                    await store.load(session_id)
                    loads.append(time.perf_counter() - started)
                    await store.release(session_id)
                else:
                    agent = await open_agent(
                        config=Config(), cwd=workspace, store=store, session_id=session_id
                    )
                    reopens.append(time.perf_counter() - started)
                    await agent.aclose()
    load, reopen = statistics.median(loads), statistics.median(reopens)
    return {
        "rounds": rounds,
        "store_load_ms": round(load * 1000, 1),
        "reopen_ms": round(reopen * 1000, 1),
        "ratio": round(reopen / load, 2),
        "target": TIME_TARGET,
        "met": reopen / load <= TIME_TARGET,
    }


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.reopen")
    parser.add_argument("turns", nargs="?", type=int, default=TURNS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        root = Path(tmp)
        workspace = root / "workspace"
        workspace.mkdir()
        path = root / "sessions.sqlite"
        session_id, events = asyncio.run(_write(path, workspace, args.turns))
        rounds = [_child(path, workspace, session_id) for _ in range(args.rounds)]
        above = statistics.median(r["reopened_mb"] - r["baseline_mb"] for r in rounds)
        peak = statistics.median(r["peak_mb"] - r["baseline_mb"] for r in rounds)
        timing = asyncio.run(_timed(path, workspace, session_id, args.rounds))
    return {
        "benchmark": "reopening a stored session as an Agent",
        "turns": args.turns,
        "events": events,
        "memory": {
            "rounds": args.rounds,
            "baseline_mb": round(statistics.median(r["baseline_mb"] for r in rounds), 1),
            "resident_above_baseline_mb": round(above, 1),
            "peak_above_baseline_mb": round(peak, 1),
            "target_mb": MEMORY_TARGET_MB,
            "met": above <= MEMORY_TARGET_MB,
        },
        "time": timing,
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
