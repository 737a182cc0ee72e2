"""Stored rows as a log: decoding them, checking them, and the computed repair of an interrupted
tail (docs/ARCHITECTURE.md, the store); the same in every store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from engine.events import (
    Event,
    EventDecodeError,
    TurnStart,
    UnknownEventTypeError,
    decode_rows,
    make_event,
)
from engine.gc_policy import gc_paused
from engine.invariants import InvariantError, LogState
from engine.store.base import SessionInfo
from engine.store.errors import StoreError


def repair(state: LogState, at: float) -> list[Event]:
    """Close an interrupted turn without truncating it.

    `load` stamps the repair with the time it writes it; the views that only compute it
    (`inspect`, `read`, `read_last_turns`) with the time of the last stored event, so every view
    of one stored log shows the same tail, however often it is read.
    """
    return [
        make_event(payload, state.next_seq + i, at)
        for i, payload in enumerate(state.closing_payloads())
    ]


def repair_view(events: list[Event]) -> list[Event]:
    """The computed repair of `events`, a stored log's tail from a `turn/start` on (or the whole
    log when it has no turn)."""
    return repair(LogState.following(events), events[-1].time) if events else []


def decode(where: str, session_id: str, rows: Iterable[Any]) -> list[Event]:
    """The events of stored rows; a `StoreError` naming the store and session for a bad row."""
    try:
        with gc_paused():
            return decode_rows(rows)
    except (UnknownEventTypeError, EventDecodeError) as exc:
        raise StoreError(f"{where}: session {session_id!r}: {exc}") from exc


def decode_and_check(
    where: str, info: SessionInfo, rows: Iterable[Any], *, checked: bool
) -> tuple[SessionInfo, list[Event], LogState]:
    """A whole log decoded, and its state at the end (CPU work: callers run it on a thread).

    `checked`: every event's invariants are checked (a viewer's `inspect`); otherwise the state is
    taken from the last turn alone, as `acquire` takes it (a writer's `load`: the events were
    checked when they were stored, and a `Session` given them checks them again).
    """
    events = decode(where, info.id, rows)
    if not checked:
        return info, events, last_turn_state(events)
    try:
        state = LogState.of(events)
    except InvariantError as exc:
        raise StoreError(f"{where}: session {info.id!r} is corrupt: {exc}") from exc
    return info, events, state


def last_turn_state(events: Sequence[Event]) -> LogState:
    """The state after a stored log, from its last `turn/start` on (the whole log if it has no
    turn): the writer's position and what a repair of its open turn needs."""
    start = len(events) - 1
    while start > 0 and type(events[start].data) is not TurnStart:
        start -= 1
    return LogState.following(events[max(start, 0) :])
