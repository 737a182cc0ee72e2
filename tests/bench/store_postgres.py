"""PostgresStore beside raw asyncpg calls on the same rows and beside SQLiteStore, in interleaved
rounds of one run, and cross-process follow latency; prints JSON.

Run `python -m tests.bench.store_postgres [--rounds N] [--follow N] [--only PART]`. It starts a
throwaway cluster (tests/pg_cluster.py: fsync off, so the store's own overhead is not hidden behind the
disk). The raw baseline is what a program would write without the store: json.dumps of the
payload dicts, `executemany` of the same INSERT in a transaction per batch; its load a SELECT plus
json.loads per row. Each round runs the sides back to back in a rotating order; the figures are
medians over the rounds, the ratios the medians of the rounds' ratios. Loading is timed by the
wall clock (the target) and by this process's CPU (steadier on a shared machine), and `inspect`
(a viewer's read: every event's invariants checked, no lease) is timed beside `load`.

Follow latency: a child process appends one event per flush (the event's time is taken when it is
appended); this process follows the session (`PostgresStore.follow`) and records delivery time
minus event time for each: append in one process to delivery in another. The baseline does the
same with raw asyncpg (a child inserting each row with its notification in one statement; LISTEN
here, the new rows read by range on a second connection). Store and raw rounds alternate, which
goes first rotating; median and p99 pool every round's events, and each round's are listed. A
third side follows through a replica (`engine.replica`) to a subscriber: what the console and
`session/load` wait for.

Targets (issue 14): append batch 100 >= 0.5 of raw events/s; load <= 1.5x raw; follow p99 < 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import asyncpg

from engine.events import Event, LiveEvent, UserMessage
from engine.message import Source
from engine.replica import followed_session
from engine.session import Session
from engine.store.postgres.store import PostgresStore
from engine.store.sqlite.store import SQLiteStore
from tests.bench.store import _median, collector, make_events, rotated
from tests.pg_cluster import PASSWORD, PASSWORD_ENV, Cluster

TOTAL = 100_000
ROUNDS = 5
FOLLOW_EVENTS = 300
APPEND_EVENTS = {1: 1_000, 10: 5_000, 100: 20_000}
"""Events appended per round, by batch size (events per flush)."""
APPEND_TARGETS = {100: 0.5}
LOAD_TARGET = 1.5
FOLLOW_P99_TARGET_MS = 50.0
WRITE_GAP = 0.005
"""Seconds between two flushes of a follow benchmark's writer."""
_RAW_DDL = (
    "CREATE TABLE IF NOT EXISTS raw_events (session_id text NOT NULL, seq bigint NOT NULL, "
    "time double precision NOT NULL, type text NOT NULL, data text NOT NULL, "
    "PRIMARY KEY (session_id, seq))"
)
_RAW_CHANNEL = "raw_follow"
_RAW_NOTIFY = (
    "WITH row AS (INSERT INTO raw_follow (session_id, seq, time, type, data) "
    "VALUES ($1, $2, $3, $4, $5) RETURNING seq) "
    f"SELECT pg_notify('{_RAW_CHANNEL}', $1 || ' ' || (SELECT seq FROM row))"
)
_RAW_READ = (
    "SELECT seq, time, type, data FROM raw_follow WHERE session_id = $1 AND seq >= $2 ORDER BY seq"
)
_RAW_INSERT = (
    "INSERT INTO raw_events (session_id, seq, time, type, data) VALUES ($1, $2, $3, $4, $5)"
)

T = TypeVar("T")


async def store_append(
    store: PostgresStore | SQLiteStore, events: Sequence[Event], batch: int
) -> float:
    info = await store.create(cwd="/bench")
    start = time.perf_counter()
    for i in range(0, len(events), batch):
        await store.append(info.id, events[i : i + batch])
        await store.flush(info.id)
    elapsed = time.perf_counter() - start
    await store.release(info.id)
    return elapsed


async def raw_append(
    conn: asyncpg.Connection[asyncpg.Record],
    ids: list[str],
    events: Sequence[Event],
    payloads: list[dict[str, Any]],
    batch: int,
) -> float:
    session_id = f"raw{len(ids)}"
    ids.append(session_id)
    start = time.perf_counter()
    for i in range(0, len(events), batch):
        rows = [
            (session_id, e.seq, e.time, e.type, json.dumps(p))
            for e, p in zip(events[i : i + batch], payloads[i : i + batch], strict=True)
        ]
        async with conn.transaction():
            await conn.executemany(_RAW_INSERT, rows)
    return time.perf_counter() - start


Timing = tuple[float, float]
"""Seconds of wall clock and of this process's CPU (the decoding thread's included): the CPU
figure is what the client side costs, which other work on a shared machine does not inflate."""


def _timer() -> Callable[[], Timing]:
    wall, cpu = time.perf_counter(), time.process_time()
    return lambda: (time.perf_counter() - wall, time.process_time() - cpu)


async def store_load(store: PostgresStore | SQLiteStore, session_id: str) -> Timing:
    """A writer's `load`: the lease, the whole log, its state from the last turn."""
    elapsed = _timer()
    loaded = await store.load(session_id)
    timing = elapsed()
    assert len(loaded.events) == TOTAL
    assert not loaded.repaired
    await store.release(session_id)
    return timing


async def store_inspect(store: PostgresStore, session_id: str) -> Timing:
    """A viewer's `inspect` (`trellis replay`): no lease, every event's invariants checked."""
    elapsed = _timer()
    loaded = await store.inspect(session_id)
    timing = elapsed()
    assert len(loaded.events) == TOTAL
    return timing


async def raw_load(conn: asyncpg.Connection[asyncpg.Record], session_id: str) -> Timing:
    elapsed = _timer()
    rows = await conn.fetch(
        "SELECT seq, time, type, data FROM events WHERE session_id = $1 ORDER BY seq", session_id
    )
    loaded = [
        {"seq": seq, "time": t, "type": kind, "data": json.loads(data)}
        for seq, t, kind, data in rows
    ]
    timing = elapsed()
    assert len(loaded) == TOTAL
    return timing


def _rate(count: int, seconds: Sequence[float]) -> int:
    return round(statistics.median(count / s for s in seconds))


async def bench_append(
    cluster: Cluster, root: Path, events: list[Event], rounds: int
) -> list[dict[str, Any]]:
    payloads = [e.data.model_dump(mode="json") for e in events]
    results: list[dict[str, Any]] = []
    for batch, count in APPEND_EVENTS.items():
        subset = events[:count]
        conn = await asyncpg.connect(cluster.url, password=PASSWORD)
        try:
            await conn.execute(_RAW_DDL)
            await conn.execute(  # the store's table has it: the same work per row
                "CREATE INDEX ON raw_events (session_id, seq) WHERE type = 'turn/start'"
            )
            async with (
                PostgresStore(cluster.url, password=PASSWORD, schema=f"a{batch}") as pg,
                SQLiteStore(root / f"append-{batch}.sqlite") as sqlite,
            ):
                pg_s, raw_s, sqlite_s = await rotated(
                    rounds,
                    [
                        partial(store_append, pg, subset, batch),
                        partial(raw_append, conn, [], subset, payloads[:count], batch),
                        partial(store_append, sqlite, subset, batch),
                    ],
                )
            await conn.execute("DROP TABLE raw_events")
        finally:
            await conn.close()
        ratios = [r / s for s, r in zip(pg_s, raw_s, strict=True)]
        target = APPEND_TARGETS.get(batch)
        results.append(
            {
                "batch": batch,
                "events_per_round": count,
                "postgres_events_per_s": _rate(count, pg_s),
                "raw_asyncpg_events_per_s": _rate(count, raw_s),
                "sqlite_events_per_s": _rate(count, sqlite_s),
                "ratio_to_raw": _median(ratios),
                "ratios": [round(r, 3) for r in ratios],
                "target": target,
                "met": None if target is None else statistics.median(ratios) >= target,
            }
        )
    return results


async def bench_load(
    cluster: Cluster, root: Path, events: list[Event], rounds: int
) -> list[dict[str, Any]]:
    async with (
        PostgresStore(cluster.url, password=PASSWORD, schema="load") as pg,
        SQLiteStore(root / "load.sqlite") as sqlite,
    ):
        ids = []
        for store in (pg, sqlite):
            info = await store.create(cwd="/bench")
            for i in range(0, len(events), 1_000):
                await store.append(info.id, events[i : i + 1_000])
            await store.release(info.id)
            ids.append(info.id)
        conn = await asyncpg.connect(cluster.url, password=PASSWORD)
        await conn.execute("SET search_path = load")
        results: list[dict[str, Any]] = []
        try:
            for enabled in (True, False):
                with collector(enabled):
                    pg_t, raw_t, sqlite_t, inspect_t = await rotated(
                        rounds,
                        [
                            partial(store_load, pg, ids[0]),
                            partial(raw_load, conn, ids[0]),
                            partial(store_load, sqlite, ids[1]),
                            partial(store_inspect, pg, ids[0]),
                        ],
                    )
                ratios = [s / r for (s, _), (r, _) in zip(pg_t, raw_t, strict=True)]
                cpu_ratios = [s / r for (_, s), (_, r) in zip(pg_t, raw_t, strict=True)]
                inspect_ratios = [s / r for (s, _), (r, _) in zip(inspect_t, raw_t, strict=True)]
                results.append(
                    {
                        "collector": "enabled" if enabled else "disabled",
                        "events": TOTAL,
                        "postgres_s": _median([t for t, _ in pg_t], 4),
                        "raw_asyncpg_s": _median([t for t, _ in raw_t], 4),
                        "sqlite_s": _median([t for t, _ in sqlite_t], 4),
                        "ratio_to_raw": _median(ratios),
                        "ratios": [round(r, 3) for r in ratios],
                        "postgres_cpu_s": _median([c for _, c in pg_t], 4),
                        "raw_asyncpg_cpu_s": _median([c for _, c in raw_t], 4),
                        "cpu_ratio_to_raw": _median(cpu_ratios),
                        "postgres_inspect_s": _median([t for t, _ in inspect_t], 4),
                        "inspect_ratio_to_raw": _median(inspect_ratios),
                        "target": LOAD_TARGET,
                        "met": statistics.median(ratios) <= LOAD_TARGET,
                    }
                )
        finally:
            await conn.close()
    return results


async def follow_writer(url: str, session_id: str, count: int) -> None:
    """The store's child: loads the session and flushes one event at a time, a little apart."""
    async with PostgresStore(url, password=os.environ[PASSWORD_ENV], schema="follow") as store:
        loaded = await store.load(session_id)
        session = Session(session_id, store, loaded.events)
        for n in range(count):
            session.append(UserMessage(content=f"note {n}", source=Source("plugin")))
            await session.flush()
            await asyncio.sleep(WRITE_GAP)


async def raw_follow_writer(url: str, session_id: str, count: int) -> None:
    """The baseline's child: one statement per event on a plain connection (the row and its
    notification, committed together), the same gap apart."""
    conn = await asyncpg.connect(url, password=os.environ[PASSWORD_ENV])
    try:
        for n in range(count):
            data = json.dumps({"content": f"note {n}", "source": {"kind": "plugin"}})
            await conn.execute(_RAW_NOTIFY, session_id, n, time.time(), "user/message", data)
            await asyncio.sleep(WRITE_GAP)
    finally:
        await conn.close()


async def _child(mode: str, url: str, session_id: str, count: int) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.bench.store_postgres",
        mode,
        url,
        session_id,
        str(count),
        env={**os.environ, PASSWORD_ENV: PASSWORD},
    )


async def follow_store_round(cluster: Cluster, store: PostgresStore, count: int) -> list[float]:
    """Milliseconds from each event's append in the child to its delivery here."""
    info = await store.create(cwd="/bench")
    await store.release(info.id)
    latencies: list[float] = []
    stream = store.follow(info.id)
    child = await _child("--writer", cluster.url, info.id, count)
    async for event in stream:
        latencies.append((time.time() - event.time) * 1000)
        if len(latencies) == count:
            break
    await stream.aclose()
    await child.wait()
    return latencies


async def follow_replica_round(cluster: Cluster, store: PostgresStore, count: int) -> list[float]:
    """The same through the path the console and `session/load` use: a replica of the session
    (`engine.replica.followed_session`) and a subscriber, timed when the subscriber is called."""
    info = await store.create(cwd="/bench")
    await store.release(info.id)
    latencies: list[float] = []
    done = asyncio.Event()

    def delivered(event: Event | LiveEvent) -> None:
        latencies.append((time.time() - event.time) * 1000)
        if len(latencies) == count:
            done.set()

    async with followed_session(store, info.id) as replica:
        replica.subscribe(delivered)
        child = await _child("--writer", cluster.url, info.id, count)
        await done.wait()
    await child.wait()
    return latencies


async def follow_raw_round(cluster: Cluster, count: int) -> list[float]:
    """The same through raw asyncpg: LISTEN on one connection, and on each notification the new
    rows read by range on another (what the store does, without the store)."""
    session_id = uuid.uuid4().hex
    listen = await asyncpg.connect(cluster.url, password=PASSWORD)
    query = await asyncpg.connect(cluster.url, password=PASSWORD)
    woken = asyncio.Event()
    await listen.add_listener(_RAW_CHANNEL, lambda *_: woken.set())
    latencies: list[float] = []
    try:
        child = await _child("--raw-writer", cluster.url, session_id, count)
        while len(latencies) < count:
            await woken.wait()
            woken.clear()
            rows = await query.fetch(_RAW_READ, session_id, len(latencies))
            now = time.time()
            latencies += [(now - row["time"]) * 1000 for row in rows]
        await child.wait()
    finally:
        await listen.close()
        await query.close()
    return latencies


def _latency(values: list[float], rounds: list[list[float]]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "events": len(ordered),
        "median_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(_p99(ordered), 2),
        "max_ms": round(ordered[-1], 2),
        "round_medians_ms": [round(statistics.median(r), 2) for r in rounds],
        "round_p99s_ms": [round(_p99(sorted(r)), 2) for r in rounds],
    }


def _p99(ordered: Sequence[float]) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def bench_follow(cluster: Cluster, count: int, rounds: int) -> dict[str, Any]:
    """Rounds of `count` events through the store and through raw asyncpg, which goes first
    rotating from round to round; the figures pool every round's events."""
    conn = await asyncpg.connect(cluster.url, password=PASSWORD)
    try:
        await conn.execute(_RAW_DDL.replace("raw_events", "raw_follow"))
    finally:
        await conn.close()
    async with PostgresStore(cluster.url, password=PASSWORD, schema="follow") as store:
        store_rounds, replica_rounds, raw_rounds = await rotated(
            rounds,
            [
                partial(follow_store_round, cluster, store, count),
                partial(follow_replica_round, cluster, store, count),
                partial(follow_raw_round, cluster, count),
            ],
        )
    by_store = _latency([ms for r in store_rounds for ms in r], store_rounds)
    return {
        "rounds": rounds,
        "postgres_store": by_store,
        "replica_subscriber": _latency([ms for r in replica_rounds for ms in r], replica_rounds),
        "raw_asyncpg": _latency([ms for r in raw_rounds for ms in r], raw_rounds),
        "target_p99_ms": FOLLOW_P99_TARGET_MS,
        "met": by_store["p99_ms"] < FOLLOW_P99_TARGET_MS,
    }


PARTS = ("append", "load", "follow")


async def run(rounds: int, follow: int, parts: Sequence[str] = PARTS) -> dict[str, Any]:
    cluster = Cluster.start()
    report: dict[str, Any] = {
        "benchmark": "store_postgres",
        "rounds": rounds,
        "cluster": "throwaway, loopback, fsync off",
    }
    try:
        if "append" in parts or "load" in parts:
            events = make_events(TOTAL)
            with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
                root = Path(tmp)
                if "append" in parts:
                    report["append"] = await bench_append(cluster, root, events, rounds)
                if "load" in parts:
                    report["load"] = await bench_load(cluster, root, events, rounds)
        if "follow" in parts:
            report["follow"] = await bench_follow(cluster, follow, rounds)
    finally:
        cluster.stop()
    rows = [*report.get("append", ()), *report.get("load", ())]
    if "follow" in report:
        rows.append(report["follow"])
    report["pass"] = all(row["met"] for row in rows if row["met"] is not None)
    return report


CHILDREN = {"--writer": follow_writer, "--raw-writer": raw_follow_writer}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.store_postgres")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--follow", type=int, default=FOLLOW_EVENTS, help="events per round")
    parser.add_argument(
        "--only", choices=PARTS, action="append", help="run only this part (repeatable)"
    )
    for flag in CHILDREN:
        parser.add_argument(flag, nargs=3, metavar=("URL", "SESSION", "COUNT"), help="(child)")
    args = parser.parse_args(argv)
    for flag, child in CHILDREN.items():
        given = getattr(args, flag.removeprefix("--").replace("-", "_"))
        if given is not None:
            url, session_id, count = given
            asyncio.run(child(url, session_id, int(count)))
            return 0
    if args.rounds < 1 or args.follow < 1:
        parser.error("rounds and follow must be at least 1")
    report = asyncio.run(run(args.rounds, args.follow, args.only or PARTS))
    print(json.dumps(report, indent=2))
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
