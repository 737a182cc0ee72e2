"""Search over 100,000 events, and what feeding the index costs the appends; prints JSON.

Run `python -m tests.bench.search [--rounds N] [--events N] [--postgres]` (`--postgres`: the
latency on a throwaway PostgreSQL cluster too, `tests.pg_cluster`).

1. Latency: a SQLite store of 100,000 events (50 sessions of turns with tool calls, in 5
   workspaces; texts drawn from a 5,000-word vocabulary by a Zipf law, so a query meets a rare
   word, a common one and everything between) is indexed once (timed: what `trellis search`
   does once to a store from before the index), then each query form (a word, a common word,
   a phrase, a prefix, OR, an exclusion; of one workspace and of all) is searched in rotation,
   20 hits with their snippets. Beside each: the same word found without the index, a `LIKE`
   scan of the events' JSON, as a store without FTS would have to. Target: p95 < 100 ms.
2. Cost per appended event: the same turns appended and flushed, a flush per step as a turn
   flushes with a millisecond of the model's time between flushes, on a store feeding its index
   in the background and on one that does not, in interleaved rounds (each side first in turn). The figure is the time the appends and flushes
   take, the turn's path: the index must not cost it more than 1.2x. The indexing itself runs
   off that path; its own time (catching up at close) is printed beside, per event.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

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
from engine.store.postgres.store import PostgresStore
from engine.store.sqlite.store import SQLiteStore
from tests.bench.store import rotated

TOTAL = 100_000
SESSIONS = 50
WORKSPACES = 5
VOCABULARY = 5_000
SEARCHES = 40
"""Searches of each query form per measurement."""
LATENCY_TARGET = 0.100  # p95, seconds
COST_TARGET = 1.2
APPEND_EVENTS = 9_000
"""Events each side appends per round."""
MODEL_PAUSE = 0.001
"""Seconds between two flushes, not counted: the model's time in a turn, shortened so a round
lasts a few seconds and the index runs in its middle (at least every `LONGEST_WAIT`)."""


def words(seed: int) -> list[str]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    found: set[str] = set()
    while len(found) < VOCABULARY:
        found.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(found)


class Text:
    """Sentences from the vocabulary, the k-th word about 1/k as frequent as the first."""

    def __init__(self, seed: int) -> None:
        self.vocabulary = words(seed)
        self.rng = random.Random(seed + 1)
        self.weights = [1 / (k + 1) for k in range(VOCABULARY)]

    def __call__(self, count: int) -> str:
        return " ".join(self.rng.choices(self.vocabulary, self.weights, k=count))


def turns(text: Text, count: int) -> list[Event]:
    """Turns of a prompt and two steps, each reading a file, until `count` events."""
    session = Session("bench")
    turn = 0
    while len(session.held) + 14 <= count:
        turn += 1
        session.append(TurnStart(turn=turn))
        session.append(UserMessage(content=text(20)))
        for step in (1, 2):
            call = ToolCall(f"c{turn}.{step}", "read_file", {"path": f"src/{text(1)}.py"})
            session.append(StepStart(turn=turn, step=step))
            session.append(
                AssistantMessage(
                    turn=turn, step=step, content=text(40), tool_calls=(call,), finish="tool_calls"
                )
            )
            session.append(
                ToolCallRecord(
                    turn=turn, step=step, call_id=call.id, name=call.name, arguments=call.arguments
                )
            )
            session.append(
                ToolResultRecord(turn=turn, step=step, call_id=call.id, content=text(150))
            )
            session.append(StepEnd(turn=turn, step=step))
        session.append(TurnEnd(turn=turn, reason="completed"))
    while len(session.held) < count:
        session.append(UserMessage(content=text(10), source=Source("command", "inject")))
    return list(session.held)


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def like_scan(store: SQLiteStore | PostgresStore, word: str) -> None:
    """The baseline: the first 20 events whose JSON holds the word, unranked, without an index."""
    if isinstance(store, SQLiteStore):
        async with store._db.transaction("scanning", write=False) as conn:
            await conn.execute_fetchall(
                "SELECT session_id, seq FROM events WHERE data LIKE ? LIMIT 20", (f"%{word}%",)
            )
        return
    async with store._db.transaction("scanning") as pg:
        await pg.fetch(
            "SELECT session_id, seq FROM events WHERE data LIKE $1 LIMIT 20", f"%{word}%"
        )


async def latency(store: SQLiteStore | PostgresStore, total: int) -> dict[str, object]:
    text = Text(7)
    vocabulary = text.vocabulary
    per_session = total // SESSIONS
    async with store:
        for n in range(SESSIONS):
            info = await store.create(cwd=f"/work/project{n % WORKSPACES}")
            events = turns(text, per_session)
            for i in range(0, len(events), 1000):
                await store.append(info.id, events[i : i + 1000])
                await store.flush(info.id)
        waiting = await store.unindexed()
        start = time.perf_counter()
        await store.update_index()
        indexing = time.perf_counter() - start
        rare, common, mid = vocabulary[4000], vocabulary[0], vocabulary[300]
        forms = {
            "word": rare,
            "common word": common,
            "phrase": f'"{vocabulary[1]} {vocabulary[2]}"',
            "prefix": f"{mid[:3]}*",
            "OR": f"{vocabulary[1200]} OR {vocabulary[1300]}",
            "exclusion": f"{mid} -{vocabulary[5]}",
        }
        figures: dict[str, object] = {}
        for name, query in forms.items():
            for scope in ("/work/project1", None):
                times: list[float] = []
                for _ in range(SEARCHES):
                    began = time.perf_counter()
                    hits = await store.search(query, cwd=scope)
                    times.append(time.perf_counter() - began)
                figures[f"{name}, {'one workspace' if scope else 'all'}"] = {
                    "query": query,
                    "hits": len(hits),
                    "p50_ms": round(1000 * statistics.median(times), 2),
                    "p95_ms": round(1000 * percentile(times, 0.95), 2),
                }
        scan: list[float] = []
        for _ in range(5):
            began = time.perf_counter()
            await like_scan(store, rare)
            scan.append(time.perf_counter() - began)
    worst = max(float(f["p95_ms"]) for f in figures.values())  # type: ignore[index]
    return {
        "events": waiting,
        "indexed_once_s": round(indexing, 2),
        "indexed_per_event_us": round(1e6 * indexing / waiting, 1),
        "searches": figures,
        "baseline_like_scan_ms": round(1000 * statistics.median(scan), 2),
        "worst_p95_ms": worst,
        "target_p95_ms": 1000 * LATENCY_TARGET,
        "met": worst < 1000 * LATENCY_TARGET,
    }


async def appending(
    directory: Path, events: Sequence[Event], *, indexed: bool, round_number: int
) -> tuple[float, float]:
    """Seconds the appends and flushes took (a flush per step), and the indexing left at close."""
    path = directory / f"append-{'indexed' if indexed else 'plain'}-{round_number}.sqlite"
    store = SQLiteStore(path, search_index=indexed)
    await store.open()
    info = await store.create(cwd="/bench")
    path_time = 0.0
    batch: list[Event] = []
    for event in events:
        batch.append(event)
        if type(event.data) in (StepEnd, TurnEnd, UserMessage):
            began = time.perf_counter()
            await store.append(info.id, batch)
            await store.flush(info.id)
            path_time += time.perf_counter() - began
            batch = []
            await asyncio.sleep(MODEL_PAUSE)
    began = time.perf_counter()
    await store.aclose()
    closing = time.perf_counter() - began
    return path_time, closing


async def cost(directory: Path, rounds: int) -> dict[str, object]:
    events = turns(Text(11), APPEND_EVENTS)
    numbers = iter(range(10_000))

    async def plain() -> tuple[float, float]:
        return await appending(directory, events, indexed=False, round_number=next(numbers))

    async def indexed() -> tuple[float, float]:
        return await appending(directory, events, indexed=True, round_number=next(numbers))

    without, with_index = await rotated(rounds, [plain, indexed])
    ratios = [w[0] / p[0] for w, p in zip(with_index, without, strict=True)]
    per_event = 1e6 / len(events)
    ratio = statistics.median(ratios)
    return {
        "events_per_round": len(events),
        "rounds": rounds,
        "path_us_per_event_without_index": round(
            per_event * statistics.median(p[0] for p in without), 2
        ),
        "path_us_per_event_with_index": round(
            per_event * statistics.median(w[0] for w in with_index), 2
        ),
        "path_ratio": round(ratio, 3),
        "path_ratios": [round(r, 3) for r in ratios],
        "close_us_per_event_without_index": round(
            per_event * statistics.median(p[1] for p in without), 2
        ),
        "close_us_per_event_with_index": round(
            per_event * statistics.median(w[1] for w in with_index), 2
        ),
        "target_ratio": COST_TARGET,
        "met": ratio <= COST_TARGET,
    }


async def main(rounds: int, total: int, postgres: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="trellis-bench-search-") as directory:
        sqlite = SQLiteStore(Path(directory) / "latency.sqlite", search_index=False)
        result: dict[str, object] = {"latency_sqlite": await latency(sqlite, total)}
        if postgres:
            from tests.pg_cluster import PASSWORD, Cluster

            cluster = Cluster.start()
            try:
                pg = PostgresStore(cluster.url, password=PASSWORD, search_index=False)
                result["latency_postgres"] = await latency(pg, total)
            finally:
                cluster.stop()
        result["append_cost_sqlite"] = await cost(Path(directory), rounds)
        return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--events", type=int, default=TOTAL)
    parser.add_argument(
        "--postgres", action="store_true", help="also search a throwaway PostgreSQL cluster"
    )
    options = parser.parse_args()
    result = asyncio.run(main(options.rounds, options.events, options.postgres))
    json.dump(result, sys.stdout, indent=2)
    print()
