"""Stored rows as a log: decoding them, checking them, and the computed repair of an interrupted
tail (DESIGN.md, "Store"); the same in every store."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.collector import collector_paused
from engine.events import Event, EventDecodeError, UnknownEventTypeError, decode_rows, make_event
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
        with collector_paused():
            return decode_rows(rows)
    except (UnknownEventTypeError, EventDecodeError) as exc:
        raise StoreError(f"{where}: session {session_id!r}: {exc}") from exc


def decode_and_check(
    where: str, info: SessionInfo, rows: Iterable[Any]
) -> tuple[SessionInfo, list[Event], LogState]:
    """A whole log decoded and its invariants checked (CPU work: callers run it on a thread)."""
    events = decode(where, info.id, rows)
    try:
        state = LogState.of(events)
    except InvariantError as exc:
        raise StoreError(f"{where}: session {info.id!r} is corrupt: {exc}") from exc
    return info, events, state
