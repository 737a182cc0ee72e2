"""The transcript projection and the exports on long stored sessions; prints JSON.

Run `python -m tests.bench.transcript`. Targets (the replay issue): loading a session and building
its transcript takes at most 1.5x the store's own load; the projection is linear (10x the events,
at most 12x the time); the HTML export of a 10,000-turn session is reported with its size.
Times are CPU seconds of this process (the store's reader thread included), the best of `RUNS`, so
other work on a shared machine does not skew the ratios.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from engine.events import Event
from engine.store.sqlite import SQLiteStore
from replay.export import export
from replay.transcript import transcript_of
from tests.bench.store import make_events

TURN_EVENTS = 12  # make_events writes turns of a prompt and two tool steps
TURNS = (1_000, 10_000)
LOAD_TARGET = 1.5
LINEAR_TARGET = 12.0
RUNS = 5


async def stored(path: Path, events: list[Event]) -> str:
    async with SQLiteStore(path) as store:
        info = await store.create(cwd="/bench")
        for i in range(0, len(events), 1_000):
            await store.append(info.id, events[i : i + 1_000])
        await store.flush(info.id)
        return info.id


async def timed_load(path: Path, session_id: str, project: bool) -> float:
    async with SQLiteStore(path) as store:
        start = time.process_time()
        events = (await store.inspect(session_id)).events
        if project:
            transcript_of(events)
        return time.process_time() - start


def best(times: list[float]) -> float:
    return min(times)


async def measure(turns: int, directory: Path) -> dict[str, Any]:
    events = make_events(turns * TURN_EVENTS)
    path = directory / f"{turns}.sqlite"
    session_id = await stored(path, events)
    load = best([await timed_load(path, session_id, False) for _ in range(RUNS)])
    both = best([await timed_load(path, session_id, True) for _ in range(RUNS)])
    projection: list[float] = []
    for _ in range(RUNS):
        start = time.process_time()
        transcript_of(events)
        projection.append(time.process_time() - start)
    result: dict[str, Any] = {
        "turns": turns,
        "events": len(events),
        "store_load_s": round(load, 4),
        "load_and_transcript_s": round(both, 4),
        "load_ratio": round(both / load, 3),
        "transcript_s": round(best(projection), 4),
        "transcript_median_s": round(statistics.median(projection), 4),
    }
    if turns == TURNS[-1]:
        async with SQLiteStore(path) as store:
            info = await store.info(session_id)
        start = time.process_time()
        page = export(info, events, "html")
        result["html_export_s"] = round(time.process_time() - start, 4)
        result["html_bytes"] = len(page.encode())
    return result


async def main() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        small, large = [await measure(turns, Path(tmp)) for turns in TURNS]
    linear = large["transcript_s"] / small["transcript_s"]
    return {
        "sizes": [small, large],
        "linear_ratio_10x": round(linear, 3),
        "targets": {
            "load_ratio_max": LOAD_TARGET,
            "load_ratio_met": max(small["load_ratio"], large["load_ratio"]) <= LOAD_TARGET,
            "linear_ratio_max": LINEAR_TARGET,
            "linear_met": linear <= LINEAR_TARGET,
        },
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main()), indent=2))
