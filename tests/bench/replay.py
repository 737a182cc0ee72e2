"""Benchmark: every figure of the replay issue (issue 11) in one run; prints JSON.

Run `python -m tests.bench.replay [--rounds N]`. Each figure stands beside its baseline, measured
in the same run in interleaved rounds (the side that goes first alternates), so drift of a shared
machine hits both; a ratio is the median of the rounds' ratios. Targets:

- `load`: the store's load of a 100,000-event session within 1.5x a raw `SELECT` + `json.loads`
  of the same rows, the garbage collector in the same state for both (enabled, then disabled);
  wall-clock seconds (`tests/bench/store.py`'s `bench_load`).
- `transcript`: loading a session and building its transcript within 1.5x the store's own load,
  on 1,000 and 10,000 turns, and linear (10x the events in at most 12x the time); CPU seconds of
  the process (the store's reader threads included), which a busy machine skews least. The HTML
  export of the 10,000-turn session, with its size.
- `timeline`: a seek to a random seq within 50 ms and a player step forward or back within 10 ms
  on a 10,000-turn session, the timeline using at most 2x the memory of the Context it replays;
  baselines: replaying the log from the start with `ContextRebuilder` (what a seek costs without
  checkpoints) and the memory of that replayed Context.
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from engine.context import ContextRebuilder
from engine.events import (
    AreaCursor,
    AreaRegister,
    AreaRender,
    AreaState,
    AssistantMessage,
    Event,
    GcCollect,
    MessageData,
    Payload,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.gateway.base import GatewayType
from engine.message import Role, Source, ToolCall
from engine.store.sqlite.store import SQLiteStore
from replay.export import export
from replay.player import Player
from replay.timeline import Timeline, TimelineState
from replay.transcript import transcript_of
from tests.bench.store import TOTAL, bench_load, bench_main, make_events

SIZES = (1_000, 10_000)
SAMPLES = 200
TURN_EVENTS = 12  # make_events writes turns of a prompt and two tool steps
SEEK_TARGET_MS = 50.0
STEP_TARGET_MS = 10.0
MEMORY_TARGET = 2.0
TRANSCRIPT_TARGET = 1.5
LINEAR_TARGET = 12.0


def session(turns: int) -> list[Event]:
    """A session of `turns` turns: a tool call per turn, an injected note every 10 turns, and a
    notice Area rendered and collected every 100 turns (so the Context is cut and carried)."""
    payloads: list[Payload] = []
    serial = 0
    for turn in range(1, turns + 1):
        if turn % 10 == 0:
            payloads.append(UserMessage(content=f"note {turn}", source=Source("plugin")))
        payloads += [TurnStart(turn=turn), UserMessage(content=f"question {turn} " * 8)]
        if turn % 100 == 0:
            serial += 1
            area = f"notice#{serial}"
            payloads += [
                AreaRegister(area=area, kind="notice", name="n"),
                AreaCursor(area=area),
                AreaRender(
                    area=area,
                    messages=(MessageData(role=Role.user, content="notice"),),
                    earliest=0,
                    latest=0,
                ),
                AreaState(area=area, life="retired", flow="yielded"),
            ]
        payloads += [
            StepStart(turn=turn, step=1),
            AssistantMessage(
                turn=turn,
                step=1,
                content="reading",
                tool_calls=(ToolCall(f"c{turn}", "read_file", {"path": "a"}),),
            ),
            ToolCallRecord(turn=turn, step=1, call_id=f"c{turn}", name="read_file"),
            ToolResultRecord(turn=turn, step=1, call_id=f"c{turn}", content="line\n" * 20),
            StepEnd(turn=turn, step=1),
            StepStart(turn=turn, step=2),
            AssistantMessage(turn=turn, step=2, content="answer " * 12),
            StepEnd(turn=turn, step=2),
            TurnEnd(turn=turn, reason="completed"),
        ]
    events = [
        Event(seq=i, time=float(i), type=p.event_type, data=p) for i, p in enumerate(payloads)
    ]
    return _with_collections(events)


def _with_collections(events: list[Event]) -> list[Event]:
    """Fix each notice's render range to where it landed, and collect it at its next turn."""
    rebuilder = ContextRebuilder(GatewayType.scripted)
    fixed: list[Event] = []
    pending: str | None = None
    for event in events:
        data = event.data
        if isinstance(data, AreaRender):
            at = len(rebuilder.context)
            data = data.model_copy(update={"earliest": at, "latest": at})
            pending = data.area
        if isinstance(data, TurnStart) and pending is not None:
            earliest = rebuilder.areas[pending].range
            assert earliest is not None
            start = earliest.earliest
            tail = len(rebuilder.context) - start
            collect = GcCollect(
                areas=(pending,),
                earliest=start,
                reclaimed=(start,),
                carried=tuple(range(start + 1, start + tail)),
            )
            fixed.append(_event(len(fixed), data))
            rebuilder.apply(fixed[-1])
            fixed.append(_event(len(fixed), collect))
            rebuilder.apply(fixed[-1])
            pending = None
            continue
        fixed.append(_event(len(fixed), data))
        rebuilder.apply(fixed[-1])
    return fixed


def _event(seq: int, data: Payload) -> Event:
    return Event(seq=seq, time=float(seq) * 0.5, type=data.event_type, data=data)


def _ms(run: Callable[[], object], samples: int) -> dict[str, float]:
    times: list[float] = []
    for _ in range(samples):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {
        "median_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(len(times) * 0.95) - 1], 3),
        "max_ms": round(times[-1], 3),
    }


def _allocated(build: Callable[[], object]) -> tuple[object, int]:
    gc.collect()
    tracemalloc.start()
    built = build()
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return built, size


def measure(turns: int) -> dict[str, Any]:
    events = session(turns)
    rng = random.Random(turns)
    # memory: the replayed Context alone (the raw baseline) against the whole timeline
    replayed, context_bytes = _allocated(lambda: ContextRebuilder.of(GatewayType.scripted, events))
    assert isinstance(replayed, ContextRebuilder)
    built, timeline_bytes = _allocated(lambda: Timeline.of(GatewayType.scripted, events))
    assert isinstance(built, Timeline)
    timeline = built
    last = events[-1].seq
    seek = _ms(lambda: timeline.at(rng.randint(-1, last)), SAMPLES)
    baseline = _ms(
        lambda: ContextRebuilder.of(GatewayType.scripted, events[: rng.randint(0, last) + 1]), 5
    )
    player: Player[TimelineState] = Player(events, lambda: timeline)
    player.seek(rng.randint(len(events) // 2, len(events) - SAMPLES - 1))

    def forward() -> None:
        player.step_forward()
        player.state()

    def back() -> None:
        player.step_back()
        player.state()

    return {
        "turns": turns,
        "events": len(events),
        "context_items": len(replayed.context),
        "seek": seek,
        "player_step_forward": _ms(forward, SAMPLES),
        "player_step_back": _ms(back, SAMPLES),
        "baseline_replay_from_start": baseline,
        "context_bytes": context_bytes,
        "timeline_bytes": timeline_bytes,
        "timeline_over_context": round(timeline_bytes / context_bytes, 2),
    }


def timeline_figures(turns: int) -> dict[str, Any]:
    figures = measure(turns)
    steps = (figures["player_step_forward"], figures["player_step_back"])
    figures["met"] = (
        figures["seek"]["p95_ms"] <= SEEK_TARGET_MS
        and max(step["p95_ms"] for step in steps) <= STEP_TARGET_MS
        and figures["timeline_over_context"] <= MEMORY_TARGET
    )
    return figures


# --- load + transcript ----------------------------------------------------------------------------


async def stored(path: Path, events: list[Event]) -> str:
    async with SQLiteStore(path) as store:
        info = await store.create(cwd="/bench")
        for i in range(0, len(events), 1_000):
            await store.append(info.id, events[i : i + 1_000])
        await store.flush(info.id)
        return info.id


async def cpu_load(store: SQLiteStore, session_id: str, project: bool) -> float:
    start = time.process_time()
    events = (await store.inspect(session_id)).events
    if project:
        transcript_of(events)
    return time.process_time() - start


async def alternating(
    rounds: int, first: Callable[[], Awaitable[float]], second: Callable[[], Awaitable[float]]
) -> tuple[list[float], list[float]]:
    """Seconds of each side per round; the side that goes first alternates."""
    a: list[float] = []
    b: list[float] = []
    for number in range(rounds):
        if number % 2:
            b.append(await second())
            a.append(await first())
        else:
            a.append(await first())
            b.append(await second())
    return a, b


async def transcript_figures(turns: int, root: Path, rounds: int) -> dict[str, Any]:
    events = make_events(turns * TURN_EVENTS)
    path = root / f"transcript-{turns}.sqlite"
    session_id = await stored(path, events)
    async with SQLiteStore(path) as store:
        load, both = await alternating(
            rounds,
            lambda: cpu_load(store, session_id, project=False),
            lambda: cpu_load(store, session_id, project=True),
        )
        info = await store.info(session_id)
    ratios = [b / a for a, b in zip(load, both, strict=True)]
    figures: dict[str, Any] = {
        "turns": turns,
        "events": len(events),
        "store_load_s": round(statistics.median(load), 4),
        "load_and_transcript_s": round(statistics.median(both), 4),
        "ratio": round(statistics.median(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
        "target": TRANSCRIPT_TARGET,
        "met": statistics.median(ratios) <= TRANSCRIPT_TARGET,
    }
    if turns == SIZES[-1]:
        start = time.process_time()
        page = export(info, events, "html")
        figures["html_export_s"] = round(time.process_time() - start, 4)
        figures["html_bytes"] = len(page.encode())
    return figures


# --- the run --------------------------------------------------------------------------------------


async def run(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        root = Path(tmp)
        load = await bench_load(root, make_events(TOTAL), rounds)
        small, large = [await transcript_figures(turns, root, rounds) for turns in SIZES]
    linear = large["load_and_transcript_s"] / small["load_and_transcript_s"]
    timeline = [timeline_figures(turns) for turns in SIZES]
    met = [row["met"] for row in (*load, small, large, timeline[-1])]
    return {
        "benchmark": "replay",
        "rounds": rounds,
        "load": load,
        "transcript": {
            "sizes": [small, large],
            "linear_ratio_10x": round(linear, 3),
            "linear_target": LINEAR_TARGET,
            "linear_met": linear <= LINEAR_TARGET,
        },
        "timeline": timeline,
        "pass": all(met) and linear <= LINEAR_TARGET,
    }


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("tests.bench.replay", run, argv)


if __name__ == "__main__":
    sys.exit(main())
