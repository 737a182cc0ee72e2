"""SQLiteStore throughput beside raw sqlite3, in interleaved rounds of one run; prints JSON.

Run `python -m tests.bench.store [--rounds N]`. The raw baseline uses the same table, WAL and
synchronous=NORMAL; its append is json.dumps of the payload dicts plus executemany and a commit
per batch, its load a SELECT plus json.loads per row. Each round measures the store and the raw
baseline back to back (in rotating order), so drift of a shared machine hits both; the figures
are medians over the rounds, the ratio the median of the rounds' ratios. Beside the one-event
flush it measures the writer thread's empty transaction in the same rounds: the hop from the loop
to that thread and back, which the raw baseline, committing on its own thread, never pays.

Targets (issues 10 and 11): a one-event flush (an idle inject, batch 1) at >= 0.3 of raw events/s;
batched append (100 per flush) at >= 0.7; loading a 100,000-event session within 1.5x of the raw
load, with the garbage collector in the same state for both (measured enabled and disabled).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from contextlib import AsyncExitStack, closing, contextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

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
from engine.store.sqlite.store import SQLiteStore
from engine.store.sqlite.writer_thread import SQLiteWriter

T = TypeVar("T")

TOTAL = 100_000
ROUNDS = 5
APPEND_EVENTS = {1: 2_000, 10: 10_000, 100: 50_000, 1_000: 100_000}
"""Events appended per round, by batch size (events per flush)."""
APPEND_TARGETS = {1: 0.3, 100: 0.7, 1_000: 0.7}
LOAD_TARGET = 1.5
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
    while len(session.held) + _TURN_EVENTS <= count:
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
    while len(session.held) < count:
        session.append(UserMessage(content="Injected while idle.", source=Source("plugin")))
    return list(session.held)


def raw_connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def raw_append(
    conn: sqlite3.Connection,
    *,
    session_id: str,
    subset: Sequence[Event],
    payloads: list[dict[str, Any]],
    batch: int,
) -> float:
    start = time.perf_counter()
    for i in range(0, len(subset), batch):
        rows = [
            (session_id, e.seq, e.time, e.type, json.dumps(p))
            for e, p in zip(subset[i : i + batch], payloads[i : i + batch], strict=False)
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
        elapsed = time.perf_counter() - start
        assert len(loaded) == TOTAL
        return elapsed


async def store_append(store: SQLiteStore, events: Sequence[Event], batch: int) -> float:
    info = await store.create(cwd="/bench")
    start = time.perf_counter()
    for i in range(0, len(events), batch):
        await store.append(info.id, events[i : i + batch])
        await store.flush(info.id)
    elapsed = time.perf_counter() - start
    await store.release(info.id)
    return elapsed


async def store_load(store: SQLiteStore, session_id: str) -> float:
    start = time.perf_counter()
    loaded = await store.load(session_id)
    elapsed = time.perf_counter() - start
    assert len(loaded.events) == TOTAL
    assert not loaded.repaired
    return elapsed


async def rotated(rounds: int, sides: Sequence[Callable[[], Awaitable[T]]]) -> list[list[T]]:
    """What each side measured, per round; which side goes first rotates from round to round."""
    measured: list[list[T]] = [[] for _ in sides]
    for number in range(rounds):
        for k in range(len(sides)):
            index = (number + k) % len(sides)
            measured[index].append(await sides[index]())
    return measured


def awaitable(measure: Callable[[], T]) -> Callable[[], Awaitable[T]]:
    """A synchronous side, to be rotated with the store's."""

    async def measured() -> T:
        return measure()

    return measured


async def writer_hops(writer: SQLiteWriter, count: int) -> float:
    """Seconds for `count` empty transactions on the store's writer thread: the hop from the
    loop to the thread and back that every flush pays, and the raw baseline never does."""
    start = time.perf_counter()
    for _ in range(count):
        await writer.write(_no_work)
    return time.perf_counter() - start


def _no_work(conn: sqlite3.Connection) -> None:
    """The work of an empty transaction."""


@contextmanager
def collector(enabled: bool) -> Iterator[None]:
    was = gc.isenabled()
    gc.collect()
    (gc.enable if enabled else gc.disable)()
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()


def _median(values: Sequence[float], digits: int = 3) -> float:
    return round(statistics.median(values), digits)


async def bench_append(root: Path, events: list[Event], rounds: int) -> list[dict[str, Any]]:
    payloads = [e.data.model_dump(mode="json") for e in events]
    results: list[dict[str, Any]] = []
    for batch, count in APPEND_EVENTS.items():
        subset = events[:count]
        raw_ids = iter([f"r{n}" for n in range(rounds)])
        async with AsyncExitStack() as stack:
            store = await stack.enter_async_context(SQLiteStore(root / f"store-{batch}.sqlite"))
            conn = stack.enter_context(closing(raw_connect(root / f"raw-{batch}.sqlite")))
            conn.execute(_EVENTS_DDL)
            raw = partial(raw_append, conn, subset=subset, payloads=payloads, batch=batch)
            sides: list[Callable[[], Awaitable[float]]] = [
                partial(store_append, store, subset, batch),
                awaitable(lambda: raw(session_id=next(raw_ids))),  # noqa: B023 - this iteration's
            ]
            if batch == 1:  # a flush of one event is mostly the hop: measure it beside
                writer = SQLiteWriter(root / "hops.sqlite", busy_timeout=5.0)
                await writer.open()
                stack.push_async_callback(writer.aclose)
                sides.append(partial(writer_hops, writer, count))
            store_s, raw_s, *hop_s = await rotated(rounds, sides)
        ratios = [r / s for s, r in zip(store_s, raw_s, strict=True)]
        target = APPEND_TARGETS.get(batch)
        row: dict[str, Any] = {
            "batch": batch,
            "events_per_round": count,
            "store_events_per_s": round(statistics.median(count / s for s in store_s)),
            "raw_events_per_s": round(statistics.median(count / s for s in raw_s)),
            "ratio": _median(ratios),
            "ratios": [round(r, 3) for r in ratios],
            "target": target,
            "met": None if target is None else statistics.median(ratios) >= target,
        }
        if hop_s:
            flushes = count / batch
            row["per_flush_us"] = {
                "store": _median([s / flushes * 1e6 for s in store_s], 1),
                "raw": _median([s / flushes * 1e6 for s in raw_s], 1),
                "writer_hop": _median([s / flushes * 1e6 for s in hop_s[0]], 1),
            }
        results.append(row)
    return results


async def bench_load(root: Path, events: list[Event], rounds: int) -> list[dict[str, Any]]:
    path = root / "load.sqlite"
    async with SQLiteStore(path) as store:
        info = await store.create(cwd="/bench")
        for i in range(0, len(events), 1_000):
            await store.append(info.id, events[i : i + 1_000])
        await store.flush(info.id)
    results: list[dict[str, Any]] = []
    async with SQLiteStore(path) as store:
        for enabled in (True, False):
            with collector(enabled):
                sides: list[Callable[[], Awaitable[float]]] = [
                    partial(store_load, store, info.id),
                    awaitable(partial(raw_load, path, info.id)),
                ]
                store_s, raw_s = await rotated(rounds, sides)
            ratios = [s / r for s, r in zip(store_s, raw_s, strict=True)]
            results.append(
                {
                    "collector": "enabled" if enabled else "disabled",
                    "events": TOTAL,
                    "store_s": _median(store_s, 4),
                    "raw_s": _median(raw_s, 4),
                    "ratio": _median(ratios),
                    "ratios": [round(r, 3) for r in ratios],
                    "target": LOAD_TARGET,
                    "met": statistics.median(ratios) <= LOAD_TARGET,
                }
            )
    return results


async def run(rounds: int) -> dict[str, Any]:
    events = make_events(TOTAL)
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        root = Path(tmp)
        append = await bench_append(root, events, rounds)
        load = await bench_load(root, events, rounds)
    met = [row["met"] for row in (*append, *load) if row["met"] is not None]
    return {
        "benchmark": "store",
        "rounds": rounds,
        "append": append,
        "load": load,
        "pass": all(met),
    }


def bench_main(
    module: str,
    run: Callable[[int], Coroutine[Any, Any, dict[str, Any]]],
    argv: Sequence[str] | None,
) -> int:
    """`python -m MODULE [--rounds N]`: runs the bench, prints its report as JSON; exit 1 when a
    target is missed."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("rounds must be at least 1")
    report = asyncio.run(run(args.rounds))
    print(json.dumps(report, indent=2))
    return 0 if report["pass"] else 1


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("tests.bench.store", run, argv)


if __name__ == "__main__":
    sys.exit(main())
