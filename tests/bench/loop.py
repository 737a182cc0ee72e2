"""Engine overhead per turn of the agent loop: as a session grows, and on SQLite beside memory.

Run `python -m tests.bench.loop [TURNS]`; prints JSON. The scripted model answers at zero delay
with request recording off; each turn is one tool call of a trivial custom tool, then an answer
(two steps). Four agents run side by side: early (turns 100-200) and late (the last 100 turns up
to TURNS), each in memory and on a `SQLiteStore` in a temp directory. After the late agents are
played up to their window, the four take one turn each per round, in a rotating order, so drift
of a shared machine hits every figure alike; figures are medians of the time per turn.

Targets (issue 10): late turns at most 1.2x early turns (per store); a SQLite turn at most 1.5x an
in-memory turn (early and late).

`--profile` adds a cProfile of 100 more turns of the late in-memory agent after the measured ones
(top functions by own time).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engine.agent import Agent, open_agent
from engine.config import Config
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.store.sqlite.store import SQLiteStore
from engine.tools import Tool, ToolContext, ToolOutput, ToolRegistry

TURNS = 10_000
EARLY = (100, 200)
"""Turns (1-based, inclusive start, exclusive end) of the early window."""
WINDOW = EARLY[1] - EARLY[0]
GROWTH_TARGET = 1.2
STORE_TARGET = 1.5
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


@dataclass
class Runner:
    """One agent and the turns it has played."""

    name: str
    agent: Agent
    gateway: ScriptedGateway
    store: SQLiteStore | None
    played: int = 0
    samples: list[float] = field(default_factory=list)

    async def play(self, turns: int, *, record: bool = False) -> None:
        for _ in range(turns):
            self.played += 1
            turn = self.played
            self.gateway.push(
                Reply(tool_calls=[ToolCall(f"c{turn}", Noop.name, {})]),
                Reply(text=f"done {turn}"),
            )
            started = time.perf_counter()
            self.agent.send(f"turn {turn}")
            await self.agent.when_idle()
            if record:
                self.samples.append(time.perf_counter() - started)

    async def aclose(self) -> None:
        await self.agent.aclose()
        if self.store is not None:
            await self.store.aclose()


async def _runner(name: str, root: Path, *, sqlite: bool) -> Runner:
    workspace = root / name
    workspace.mkdir()
    gateway = ScriptedGateway(record_requests=False, strict=True)
    store = await SQLiteStore(root / f"{name}.sqlite").open() if sqlite else None
    agent = await open_agent(
        config=Config(),
        cwd=workspace,
        store=store,
        gateway=gateway,
        tools=ToolRegistry([Noop()]),
    )
    return Runner(name, agent, gateway, store)


def _median_ms(samples: Sequence[float]) -> float:
    return round(statistics.median(samples) * 1_000, 3)


def _compare(slow: Runner, fast: Runner, target: float) -> dict[str, Any]:
    ratio = statistics.median(slow.samples) / statistics.median(fast.samples)
    return {
        "figure": slow.name,
        "baseline": fast.name,
        "figure_median_ms": _median_ms(slow.samples),
        "baseline_median_ms": _median_ms(fast.samples),
        "ratio": round(ratio, 3),
        "target": target,
        "met": ratio <= target,
    }


async def _run(turns: int, *, profile: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        root = Path(tmp)
        runners = {
            name: await _runner(name, root, sqlite=name.endswith("sqlite"))
            for name in ("early-memory", "late-memory", "early-sqlite", "late-sqlite")
        }
        try:
            for name, runner in runners.items():
                await runner.play((EARLY[0] if name.startswith("early") else turns - WINDOW) - 1)
            gc.collect()
            order = list(runners.values())
            for round_number in range(WINDOW):
                shift = round_number % len(order)
                for runner in order[shift:] + order[:shift]:
                    await runner.play(1, record=True)
            report = ""
            if profile:  # extra turns after the measured ones, so profiling skews no figure
                profiler = cProfile.Profile()
                profiler.enable()
                await runners["late-memory"].play(PROFILED_TURNS)
                profiler.disable()
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
                report = out.getvalue()
            r = runners
            figures: dict[str, Any] = {
                "turns": turns,
                "early_turns": f"{EARLY[0]}-{EARLY[1] - 1}",
                "late_turns": f"{turns - WINDOW}-{turns - 1}",
                "median_ms_per_turn": {n: _median_ms(x.samples) for n, x in r.items()},
                "growth": [
                    _compare(r["late-memory"], r["early-memory"], GROWTH_TARGET),
                    _compare(r["late-sqlite"], r["early-sqlite"], GROWTH_TARGET),
                ],
                "store": [
                    _compare(r["early-sqlite"], r["early-memory"], STORE_TARGET),
                    _compare(r["late-sqlite"], r["late-memory"], STORE_TARGET),
                ],
            }
            if report:
                figures["profile_100_more_turns"] = report.splitlines()
            return figures
        finally:
            for runner in runners.values():
                await runner.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.loop")
    parser.add_argument("turns", nargs="?", type=int, default=TURNS)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    if args.turns < EARLY[1] + WINDOW:
        parser.error(f"turns must be at least {EARLY[1] + WINDOW}")
    figures = asyncio.run(_run(args.turns, profile=args.profile))
    met = [row["met"] for row in (*figures["growth"], *figures["store"])]
    report = {"benchmark": "agent loop, one tool call per turn", **figures, "pass": all(met)}
    print(json.dumps(report, indent=2))
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
