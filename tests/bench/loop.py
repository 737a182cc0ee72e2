"""Engine overhead per step of the agent loop as a session grows (DESIGN.md, principle 5).

Run `python -m tests.bench.loop [TURNS]`; prints JSON. The scripted model answers at zero delay
with request recording off; each turn is one tool call of a trivial custom tool, then an answer
(two steps). The target (issue 4): turns 9,900-10,000 take at most 1.5x turns 100-200 (compared by
median time per turn; the ratio of means is reported too). It runs once
with an in-memory session (store=None) and once with a `SQLiteStore` in a temp directory.

`--profile` adds a cProfile of 100 more turns after the measured ones in the in-memory run (top
functions by own time).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engine.agent import Agent, open_agent
from engine.config import Config
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.store.sqlite import SQLiteStore
from engine.tools import Tool, ToolContext, ToolOutput, ToolRegistry

TURNS = 10_000
EARLY = (100, 200)
"""Turns (1-based, inclusive start, exclusive end) whose mean is the baseline."""
TARGET_RATIO = 1.5
PROFILED_TURNS = 100
INTERNAL = PrivatizationLabel(cls=PrivacyClass.internal)


class NoopArgs(BaseModel):
    pass


class Noop(Tool[NoopArgs]):
    """A tool that does nothing, so the figures are the engine's own cost."""

    name = "noop"
    description = "Does nothing."
    args_model = NoopArgs

    async def run(self, args: NoopArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("ok", label=INTERNAL)


def _window(turns: int) -> tuple[int, int]:
    """The late window: the last 100 turns."""
    return (max(turns - 100, EARLY[1]), turns)


async def _play(agent: Agent, gateway: ScriptedGateway, first: int, last: int) -> list[float]:
    """Seconds per turn for turns `first..last`."""
    samples: list[float] = []
    for turn in range(first, last + 1):
        gateway.push(
            Reply(tool_calls=[ToolCall(f"c{turn}", Noop.name, {})]),
            Reply(text=f"done {turn}"),
        )
        started = time.perf_counter()
        agent.send(f"turn {turn}")
        await agent.when_idle()
        samples.append(time.perf_counter() - started)
    return samples


def _figures(samples: Sequence[float], turns: int) -> dict[str, Any]:
    early = samples[EARLY[0] - 1 : EARLY[1] - 1]
    late_start, late_end = _window(turns)
    late = samples[late_start - 1 : late_end]
    early_ms = statistics.mean(early) * 1_000
    late_ms = statistics.mean(late) * 1_000
    # The median ratio decides: a burst of load on a shared machine moves a mean, not a median.
    ratio = statistics.median(late) / statistics.median(early)
    return {
        "turns": turns,
        "early_turns": f"{EARLY[0]}-{EARLY[1]}",
        "late_turns": f"{late_start}-{late_end}",
        "early_ms_per_turn": round(early_ms, 3),
        "late_ms_per_turn": round(late_ms, 3),
        "early_ms_per_step": round(early_ms / 2, 3),
        "late_ms_per_step": round(late_ms / 2, 3),
        "early_median_ms": round(statistics.median(early) * 1_000, 3),
        "late_median_ms": round(statistics.median(late) * 1_000, 3),
        "ratio_of_means": round(late_ms / early_ms, 2),
        "ratio": round(ratio, 2),
        "target_ratio": TARGET_RATIO,
        "pass": ratio <= TARGET_RATIO,
    }


async def _run(turns: int, *, sqlite: bool, profile: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        gateway = ScriptedGateway(record_requests=False, strict=True)
        store = await SQLiteStore(Path(tmp) / "sessions.sqlite").open() if sqlite else None
        try:
            agent = await open_agent(
                config=Config(),
                cwd=workspace,
                store=store,
                gateway=gateway,
                tools=ToolRegistry([Noop()]),
            )
            gc.collect()
            samples = await _play(agent, gateway, 1, turns)
            report = ""
            if profile:  # extra turns after the measured ones, so profiling skews no figure
                profiler = cProfile.Profile()
                profiler.enable()
                await _play(agent, gateway, turns + 1, turns + PROFILED_TURNS)
                profiler.disable()
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
                report = out.getvalue()
            await agent.dispose()
            figures = _figures(samples, turns)
            figures["store"] = "sqlite" if sqlite else "memory"
            figures["events"] = len(agent.log)
            if report:
                figures["profile_100_more_turns"] = report.splitlines()
            return figures
        finally:
            if store is not None:
                await store.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.loop")
    parser.add_argument("turns", nargs="?", type=int, default=TURNS)
    parser.add_argument("--memory-only", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    if args.turns < EARLY[1] + 100:
        parser.error(f"turns must be at least {EARLY[1] + 100}")
    runs = [asyncio.run(_run(args.turns, sqlite=False, profile=args.profile))]
    if not args.memory_only:
        runs.append(asyncio.run(_run(args.turns, sqlite=True, profile=False)))
    report = {
        "benchmark": "agent loop, one tool call per turn",
        "runs": runs,
        "pass": all(run["pass"] for run in runs),
    }
    print(json.dumps(report, indent=2))
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
