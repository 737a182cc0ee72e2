"""Benchmark: timeline seeks and player steps on sessions of 1,000 and 10,000 turns.

Run as `python -m tests.bench.replay`; prints JSON. Targets (the replay issue): a seek to a random
seq within 50 ms and a player step forward or back within 10 ms on a 10,000-turn session, with the
timeline using at most 2x the memory of the Context it replays. Raw baselines in the same run:
replaying the log from the start with `ContextReplayer` (what a seek costs without checkpoints),
and the memory of that replayed Context.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable

from engine.context import ContextReplayer
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
from replay.player import Player
from replay.timeline import Timeline, TimelineState

SIZES = (1_000, 10_000)
SAMPLES = 200


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
    replayer = ContextReplayer(GatewayType.scripted)
    fixed: list[Event] = []
    pending: str | None = None
    for event in events:
        data = event.data
        if isinstance(data, AreaRender):
            at = len(replayer.context)
            data = data.model_copy(update={"earliest": at, "latest": at})
            pending = data.area
        if isinstance(data, TurnStart) and pending is not None:
            earliest = replayer.areas[pending].range
            assert earliest is not None
            start = earliest.earliest
            tail = len(replayer.context) - start
            collect = GcCollect(
                areas=(pending,),
                earliest=start,
                reclaimed=(start,),
                carried=tuple(range(start + 1, start + tail)),
            )
            fixed.append(_event(len(fixed), data))
            replayer.apply(fixed[-1])
            fixed.append(_event(len(fixed), collect))
            replayer.apply(fixed[-1])
            pending = None
            continue
        fixed.append(_event(len(fixed), data))
        replayer.apply(fixed[-1])
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


def measure(turns: int) -> dict[str, object]:
    events = session(turns)
    rng = random.Random(turns)
    # memory: the replayed Context alone (the raw baseline) against the whole timeline
    replayed, context_bytes = _allocated(lambda: ContextReplayer.of(GatewayType.scripted, events))
    assert isinstance(replayed, ContextReplayer)
    built, timeline_bytes = _allocated(lambda: Timeline.of(GatewayType.scripted, events))
    assert isinstance(built, Timeline)
    timeline = built
    last = events[-1].seq
    seek = _ms(lambda: timeline.at(rng.randint(-1, last)), SAMPLES)
    baseline = _ms(
        lambda: ContextReplayer.of(GatewayType.scripted, events[: rng.randint(0, last) + 1]), 5
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


def main() -> None:
    report = {"sizes": [measure(turns) for turns in SIZES]}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
