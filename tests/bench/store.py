"""SQLiteStore throughput beside raw sqlite3 in the same run; prints JSON.

Run `python -m tests.bench.store`. The raw baseline uses the same table, WAL and synchronous=NORMAL;
its append is json.dumps of the payload dicts plus executemany and a commit per batch, its load a
SELECT plus json.loads per row. Targets: batched append (>= 100 per flush) at >= 50% of the raw
events/s; loading a 100,000-event session within 3x of the raw load.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from engine.events import (
    AssistantMessage,
    Event,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.message import Source, ToolCall
from engine.session import Session
from engine.store.sqlite import SQLiteStore

TOTAL = 100_000
BATCHES = (1, 10, 100, 1_000)
APPEND_TARGET = 0.5
LOAD_TARGET = 3.0
_TURN_EVENTS = 12
_EVENTS_DDL = (
    "CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, time REAL NOT NULL, "
    "type TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq))"
)


def make_events(count: int) -> list[Event]:
    """A realistic mix: turns of a prompt and two steps, each with a tool call and its result;
    out-of-turn messages fill up to `count`, so every prefix a benchmark flushes loads unrepaired."""
    session = Session("bench")
    turn = 0
    while len(session.events) + _TURN_EVENTS <= count:
        turn += 1
        session.append(TurnStart(turn=turn))
        session.append(UserMessage(content=f"Please look at module {turn} and fix the tests."))
        for step in (1, 2):
            call = ToolCall(f"c{turn}.{step}", "read_file", {"path": "a.py"})
            session.append(StepStart(turn=turn, step=step, prefix_digest="ab" * 32))
            session.append(
                AssistantMessage(
                    turn=turn, step=step, content="Reading the file. " * 8, tool_calls=(call,)
                )
            )
            session.append(ToolCallRecord(turn=turn, step=step, call_id=call.id, name=call.name))
            session.append(
                ToolResultRecord(turn=turn, step=step, call_id=call.id, content="x = 1\n" * 40)
            )
            session.append(StepEnd(turn=turn, step=step))
        session.append(TurnEnd(turn=turn, reason="completed"))
    while len(session.events) < count:
        session.append(UserMessage(content="Injected while idle.", source=Source("plugin")))
    return list(session.events)


def raw_connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def raw_append(
    path: Path, events: Sequence[Event], payloads: list[dict[str, Any]], batch: int
) -> float:
    with closing(raw_connect(path)) as conn:
        conn.execute(_EVENTS_DDL)
        start = time.perf_counter()
        for i in range(0, len(events), batch):
            rows = [
                ("s", e.seq, e.time, e.type, json.dumps(p))
                for e, p in zip(events[i : i + batch], payloads[i : i + batch], strict=True)
            ]
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        return time.perf_counter() - start


def raw_load(path: Path, session_id: str) -> float:
    with closing(raw_connect(path)) as conn:
        start = time.perf_counter()
        rows = conn.execute(
            "SELECT seq, time, type, data FROM events WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()
        loaded = [
            {"seq": seq, "time": t, "type": kind, "data": json.loads(data)}
            for seq, t, kind, data in rows
        ]
        assert len(loaded) == len(rows)
        return time.perf_counter() - start


async def store_append(path: Path, events: Sequence[Event], batch: int) -> tuple[float, str]:
    async with SQLiteStore(path) as store:
        info = await store.create(cwd="/bench")
        start = time.perf_counter()
        for i in range(0, len(events), batch):
            await store.append(info.id, events[i : i + batch])
            await store.flush(info.id)
        return time.perf_counter() - start, info.id


async def store_load(path: Path, session_id: str) -> float:
    async with SQLiteStore(path) as store:
        start = time.perf_counter()
        loaded = await store.load(session_id)
        elapsed = time.perf_counter() - start
        assert len(loaded.events) == TOTAL
        assert not loaded.repaired
        return elapsed


async def main() -> dict[str, Any]:
    events = make_events(TOTAL)
    payloads = [e.data.model_dump(mode="json") for e in events]
    results: dict[str, Any] = {"append": [], "load": {}}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        loadable = ("", root)
        for batch in BATCHES:
            count = min(TOTAL, batch * 10_000)
            subset = events[:count]
            stored, session_id = await store_append(root / f"store-{batch}.sqlite", subset, batch)
            baseline = raw_append(root / f"raw-{batch}.sqlite", subset, payloads[:count], batch)
            ratio = baseline / stored
            results["append"].append(
                {
                    "batch": batch,
                    "events": count,
                    "store_events_per_s": round(count / stored),
                    "raw_events_per_s": round(count / baseline),
                    "ratio": round(ratio, 3),
                    "target": APPEND_TARGET if batch >= 100 else None,
                    "met": ratio >= APPEND_TARGET if batch >= 100 else None,
                }
            )
            if count == TOTAL:
                loadable = (session_id, root / f"store-{batch}.sqlite")
        session_id, path = loadable
        stored = await store_load(path, session_id)
        baseline = raw_load(path, session_id)
        results["load"] = {
            "events": TOTAL,
            "store_s": round(stored, 4),
            "raw_s": round(baseline, 4),
            "ratio": round(stored / baseline, 3),
            "target": LOAD_TARGET,
            "met": stored / baseline <= LOAD_TARGET,
        }
    return results


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main()), indent=2))
