"""Benchmark: how the folds that read every event of a log find an event's handler (issue 32).

Run `python -m tests.bench.dispatch [--rounds N] [--turns T]`; prints JSON. The session is the
replay benchmark's (`tests.bench.replay.session`, 10,000 turns, about 111,000 events). Each fold
runs in three forms in interleaved rounds (the order rotates each round), the form swapped in for
the method the fold calls, the rest of the fold as it is:

- `ladder`: `if type(data) is A: … elif type(data) is B: …`;
- `table`: one dict lookup, `TABLE.get(type(data))`, from payload class to a method: the code as
  it is (the other two are copies of it in their forms, here);
- `match`: `match data: case A(): …`, whose class patterns are `isinstance` tests through
  pydantic's ABC metaclass.

The folds: `assembler` and `permission`, the assembler's and the permission broker's `follow`
over every payload, as a resume feeds them (`engine/agent/followers.py`; the Context rebuilder it
feeds beside them left out, so the dispatch is most of the figure); `catch_up`, the main
screen's fold of a resumed session's log for its status line and GC log (`_CatchUp.take`, the
log in the chunks it reads); `timeline`, `Timeline.of` over every event (the rebuilder, the checkpoints
and the timeline's two dispatches, `Timeline.apply` and its cursor's `apply`). Each figure is the
median of the rounds' seconds, and `vs_ladder` the median of the rounds' ratios to the ladder.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.tui.screens.main import _CatchUp
from app.tui.widgets.side_panel import GcRow
from engine.agent.assembler import Assembler
from engine.config import Config
from engine.context.usage import TokenRate, UsageTally
from engine.events import (
    CompactEnd,
    Event,
    FloorBlock,
    GcCollect,
    ModelBind,
    Payload,
    PermissionModeSet,
    PermissionRule,
    PinAdd,
    PinRemove,
    PrefixBreak,
    SessionRewind,
    StepEnd,
    StepStart,
    ToolDefinition,
    TurnEnd,
    TurnStart,
)
from engine.gateway.base import GatewayType
from engine.session import READ_CHUNK
from engine.tools.permission import PermissionBroker
from replay.timeline import Timeline, _Cursor
from tests.bench.replay import session

FORMS = ("ladder", "table", "match")
ROUNDS = 7
TURNS = 10_000

# --- the assembler's follow ----------------------------------------------------------------------


def _follow_ladder(self: Assembler, payload: Payload) -> None:
    if type(payload) is ModelBind:
        self.grants.apply(payload)
    elif type(payload) is PinRemove:
        self.pins.apply(payload)
    elif type(payload) is PinAdd:
        self.pins.apply(payload)
        self._note_pin_id(payload.pin_id)
    elif type(payload) is FloorBlock:
        self.floor_log.note(payload)
    elif type(payload) is ToolDefinition:
        self.tool_log.note(payload)
    elif type(payload) is StepStart or type(payload) is PrefixBreak:
        self._stepped = True
        self.prefix_tally.apply(payload)


def _follow_match(self: Assembler, payload: Payload) -> None:
    match payload:
        case ModelBind():
            self.grants.apply(payload)
        case PinRemove():
            self.pins.apply(payload)
        case PinAdd():
            self.pins.apply(payload)
            self._note_pin_id(payload.pin_id)
        case FloorBlock():
            self.floor_log.note(payload)
        case ToolDefinition():
            self.tool_log.note(payload)
        case StepStart() | PrefixBreak():
            self._stepped = True
            self.prefix_tally.apply(payload)


# --- the permission broker's follow --------------------------------------------------------------


def _permission_ladder(self: PermissionBroker, payload: Payload) -> None:
    if type(payload) is PermissionRule:
        self._rules[payload.tool] = payload.decision
    elif type(payload) is PermissionModeSet:
        self.mode = payload.mode


def _permission_match(self: PermissionBroker, payload: Payload) -> None:
    match payload:
        case PermissionRule():
            self._rules[payload.tool] = payload.decision
        case PermissionModeSet():
            self.mode = payload.mode


# --- the timeline's cursor -----------------------------------------------------------------------


def _cursor_ladder(self: _Cursor, event: Event) -> None:
    self.rebuilder.apply(event)
    data = event.data
    if type(data) is TurnStart:
        self.grants.begin_turn()
    elif type(data) is TurnEnd:
        self.grants.end_turn()
    elif type(data) is ModelBind:
        self.grants.apply(data)
    elif type(data) is StepStart:
        self.last_step = (event.seq, data)
    elif type(data) is PinAdd or type(data) is PinRemove:
        self.pins.apply(data)


def _cursor_match(self: _Cursor, event: Event) -> None:
    self.rebuilder.apply(event)
    match data := event.data:
        case TurnStart():
            self.grants.begin_turn()
        case TurnEnd():
            self.grants.end_turn()
        case ModelBind():
            self.grants.apply(data)
        case StepStart():
            self.last_step = (event.seq, data)
        case PinAdd() | PinRemove():
            self.pins.apply(data)


# --- the timeline's own apply (its private state, as `Timeline.apply` keeps it) ------------------


def _timeline_ladder(self: Any, event: Event) -> None:
    garbage = self._head.rebuilder.garbage_count
    self._events.append(event)
    self._head = self._advance(self._head, event)
    data = event.data
    if type(data) is SessionRewind:
        self._low = 0
    elif type(data) is GcCollect:
        self._low = min(self._low, data.earliest)
        self._note_collection(event, garbage, data.areas, data.earliest, False)
    elif type(data) is CompactEnd:
        self._low = min(self._low, data.earliest)
        self._note_collection(event, garbage, (), data.earliest, True)
    elif type(data) is StepStart:
        self._step_seqs.append(event.seq)
        self._step_rates[event.seq] = self._rate
    elif type(data) is StepEnd and self._step_seqs:
        step_seq = self._step_seqs[-1]
        self._step_ends[step_seq] = (event.seq, data)
        figures = self._step_start(step_seq).figures
        self._rate = TokenRate.of(figures, data.usage) or self._rate
    elif type(data) is FloorBlock:
        self._floor[data.hash] = data
    elif type(data) is ToolDefinition:
        self._tools[data.hash] = data
    if (view := self._prefix.apply(data)) is not None:
        self._prefixes[event.seq] = view
    if len(self._events) % self._every == 0:
        self._checkpoint()


def _timeline_match(self: Any, event: Event) -> None:
    garbage = self._head.rebuilder.garbage_count
    self._events.append(event)
    self._head = self._advance(self._head, event)
    match data := event.data:
        case SessionRewind():
            self._low = 0
        case GcCollect():
            self._low = min(self._low, data.earliest)
            self._note_collection(event, garbage, data.areas, data.earliest, False)
        case CompactEnd():
            self._low = min(self._low, data.earliest)
            self._note_collection(event, garbage, (), data.earliest, True)
        case StepStart():
            self._step_seqs.append(event.seq)
            self._step_rates[event.seq] = self._rate
        case StepEnd() if self._step_seqs:
            step_seq = self._step_seqs[-1]
            self._step_ends[step_seq] = (event.seq, data)
            figures = self._step_start(step_seq).figures
            self._rate = TokenRate.of(figures, data.usage) or self._rate
        case FloorBlock():
            self._floor[data.hash] = data
        case ToolDefinition():
            self._tools[data.hash] = data
    if (view := self._prefix.apply(data)) is not None:
        self._prefixes[event.seq] = view
    if len(self._events) % self._every == 0:
        self._checkpoint()


# --- the main screen's catch-up ------------------------------------------------------------------


def _catch_up_ladder(self: _CatchUp, events: Sequence[Event]) -> None:
    tally = self.tally
    for event in events:
        data = event.data
        if tally.take(data):
            continue
        if type(data) is GcCollect:
            self.collections.append(GcRow.of(data))
        elif type(data) is ModelBind:
            self.model = data.model
        elif type(data) is PermissionModeSet:
            self.mode = data.mode


def _catch_up_match(self: _CatchUp, events: Sequence[Event]) -> None:
    tally = self.tally
    for event in events:
        data = event.data
        if tally.take(data):
            continue
        match data:
            case GcCollect():
                self.collections.append(GcRow.of(data))
            case ModelBind():
                self.model = data.model
            case PermissionModeSet():
                self.mode = data.mode


# --- the run -------------------------------------------------------------------------------------

_PATCHES: dict[str, tuple[tuple[type, str, Callable[..., None]], ...]] = {
    "ladder": (
        (Assembler, "follow", _follow_ladder),
        (PermissionBroker, "follow", _permission_ladder),
        (_Cursor, "apply", _cursor_ladder),
        (Timeline, "apply", _timeline_ladder),
        (_CatchUp, "take", _catch_up_ladder),
    ),
    "table": (
        (Assembler, "follow", Assembler.follow),
        (PermissionBroker, "follow", PermissionBroker.follow),
        (_Cursor, "apply", _Cursor.apply),
        (Timeline, "apply", Timeline.apply),
        (_CatchUp, "take", _CatchUp.take),
    ),
    "match": (
        (Assembler, "follow", _follow_match),
        (PermissionBroker, "follow", _permission_match),
        (_Cursor, "apply", _cursor_match),
        (Timeline, "apply", _timeline_match),
        (_CatchUp, "take", _catch_up_match),
    ),
}


@contextmanager
def form(name: str) -> Iterator[None]:
    """The classes' dispatch methods replaced by `name`'s form while inside."""
    saved = [(owner, attr, owner.__dict__[attr]) for owner, attr, _ in _PATCHES[name]]
    for owner, attr, method in _PATCHES[name]:
        setattr(owner, attr, method)
    try:
        yield
    finally:
        for owner, attr, method in saved:
            setattr(owner, attr, method)


def _assembler(events: Sequence[Event], workspace: Path) -> Callable[[], float]:
    config = Config()

    def run() -> float:
        follow = Assembler(config=config, session_id="bench", workspace=workspace).follow
        started = time.perf_counter()
        for event in events:
            follow(event.data)
        return time.perf_counter() - started

    return run


def _permission(events: Sequence[Event]) -> Callable[[], float]:
    async def deny(*_: object) -> Any:  # never asked: the fold only follows
        raise AssertionError

    def run() -> float:
        follow = PermissionBroker(deny).follow
        started = time.perf_counter()
        for event in events:
            follow(event.data)
        return time.perf_counter() - started

    return run


def _catch_up(events: Sequence[Event]) -> Callable[[], float]:
    def run() -> float:
        totals = _CatchUp(UsageTally())
        started = time.perf_counter()
        for start in range(0, len(events), READ_CHUNK):
            totals.take(events[start : start + READ_CHUNK])
        return time.perf_counter() - started

    return run


def _timeline(events: Sequence[Event]) -> Callable[[], float]:
    def run() -> float:
        started = time.perf_counter()
        Timeline.of(GatewayType.scripted, events)
        return time.perf_counter() - started

    return run


def _rounds(runs: int, measure: Callable[[], float]) -> dict[str, Any]:
    seconds: dict[str, list[float]] = {name: [] for name in FORMS}
    for number in range(runs):
        order = FORMS[number % 3 :] + FORMS[: number % 3]
        for name in order:
            gc.collect()
            with form(name):
                seconds[name].append(measure())
    figures: dict[str, Any] = {}
    for name in FORMS:
        ratios = [s / b for s, b in zip(seconds[name], seconds["ladder"], strict=True)]
        figures[name] = {
            "median_ms": round(statistics.median(seconds[name]) * 1000, 2),
            "vs_ladder": round(statistics.median(ratios), 3),
            "rounds_ms": [round(s * 1000, 1) for s in seconds[name]],
        }
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.dispatch")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--turns", type=int, default=TURNS)
    args = parser.parse_args(argv)
    events = session(args.turns)
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        report = {
            "benchmark": "dispatch",
            "events": len(events),
            "rounds": args.rounds,
            "assembler": _rounds(args.rounds, _assembler(events, Path(tmp))),
            "permission": _rounds(args.rounds, _permission(events)),
            "catch_up": _rounds(args.rounds, _catch_up(events)),
            "timeline": _rounds(args.rounds, _timeline(events)),
        }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
