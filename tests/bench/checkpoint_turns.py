"""What checkpoints cost a turn: a scripted turn with them against the same turn without.

Run `python -m tests.bench.checkpoint_turns [--files N] [--rounds N]`; prints JSON. Two agents on
SQLite stores, each in a workspace of N files (1,000 by default), one with checkpoints and one
with `[checkpoints] enabled = false`; each turn is a shell command that changes a file and a
write_file, then an answer (three steps). They take one turn each per round, in alternating
order, so drift of a shared machine hits both alike; figures are medians of the time per turn,
the baseline (without) beside each.

Target (issue 30): a turn with checkpoints at most 1.2x one without. Also reported: the shadow
repository's growth per turn, and the cold cost a new session pays (its first turn, against the
warm turns of the same agent).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.agent import Agent, open_agent
from engine.config import CheckpointsConfig, Config
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.store.sqlite.store import SQLiteStore
from engine.tools import default_registry
from engine.tools.permission import HeadlessPolicy
from tests.bench.checkpoints import make_workspace, shadow_bytes

EVERYTHING = HeadlessPolicy(allow=frozenset({"write_file", "run_shell"}))


def _turn(number: int) -> list[Reply]:
    return [
        Reply(tool_calls=[ToolCall("", "run_shell", {"command": f"echo {number} > shell.txt"})]),
        Reply(tool_calls=[ToolCall("", "write_file", {"path": "w.txt", "content": f"{number}\n"})]),
        Reply(text="done"),
    ]


async def _agent(root: Path, store: SQLiteStore, turns: int, *, checkpoints: bool) -> Agent:
    replies = [reply for n in range(turns) for reply in _turn(n)]
    return await open_agent(
        config=Config(checkpoints=CheckpointsConfig(enabled=checkpoints)),
        cwd=root,
        store=store,
        gateway=ScriptedGateway(replies, strict=True, record_requests=False),
        responder=EVERYTHING,
        tools=default_registry(),
    )


async def _timed(agent: Agent, prompt: str) -> float:
    started = time.perf_counter()
    await agent.send(prompt)
    return time.perf_counter() - started


async def measure(files: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        os.environ["TRELLIS_HOME"] = str(base / "home")
        stores: list[SQLiteStore] = []
        agents: dict[str, Agent] = {}
        for name, on in (("with", True), ("without", False)):
            root = base / name
            make_workspace(root, files)
            store = SQLiteStore(base / f"{name}.sqlite")
            await store.open()
            stores.append(store)
            agents[name] = await _agent(root, store, rounds + 1, checkpoints=on)
        # git takes a file changed in the same second as its index for "racily clean" and hashes
        # it again each time; a real workspace was not written a moment before its session
        await asyncio.sleep(1.1)
        times: dict[str, list[float]] = {"with": [], "without": []}
        first = {name: await _timed(agent, "first") for name, agent in agents.items()}
        grown_from = shadow_bytes(base / "home")
        for number in range(rounds):
            order = ("with", "without") if number % 2 == 0 else ("without", "with")
            for name in order:
                times[name].append(await _timed(agents[name], f"turn {number}"))
        growth = (shadow_bytes(base / "home") - grown_from) / rounds
        for agent in agents.values():
            await agent.aclose()
        for store in stores:
            await store.aclose()
    median = {name: statistics.median(samples) * 1000 for name, samples in times.items()}
    return {
        "files": files,
        "rounds": rounds,
        "turn_ms_with_checkpoints": round(median["with"], 2),
        "turn_ms_without (baseline)": round(median["without"], 2),
        "ratio_with_to_without": round(median["with"] / median["without"], 3),
        "target_ratio": 1.2,
        "first_turn_ms_with (a new session's cold cost)": round(first["with"] * 1000, 1),
        "first_turn_ms_without (baseline)": round(first["without"] * 1000, 1),
        "shadow_growth_bytes_per_turn": round(growth),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(measure(args.files, args.rounds)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
