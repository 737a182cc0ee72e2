"""The in-memory log of one session: seq and time, invariants, subscribers, flushes to the store."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from engine.events import (
    Event,
    LiveEvent,
    Payload,
    Scope,
    make_event,
    make_live_event,
)
from engine.invariants import LogState
from engine.store.base import SessionStore

log = logging.getLogger(__name__)

Subscriber = Callable[[Event | LiveEvent], None]


class Session:
    """Appends are synchronous and checked; `flush()` makes them durable in one batch.

    Subscribers are called after each append, in subscription order; one that raises is logged and
    does not stop the others or the append.
    """

    def __init__(
        self,
        session_id: str,
        store: SessionStore | None = None,
        events: Sequence[Event] = (),
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.id = session_id
        self._store = store
        self._clock = clock
        self._events: list[Event] = list(events)
        self._state = LogState.of(self._events)
        self._durable = len(self._events)
        self._subscribers: list[Subscriber] = []
        self._flush_lock = asyncio.Lock()

    @property
    def events(self) -> Sequence[Event]:
        return self._events

    @property
    def state(self) -> LogState:
        """The log's position (open turn and step); a copy, so callers cannot bend it."""
        return self._state.copy()

    @property
    def pending(self) -> int:
        """Events appended but not yet acknowledged by the store."""
        return len(self._events) - self._durable

    def append(self, payload: Payload) -> Event:
        """Check and append one durable event; raises `InvariantError` and appends nothing."""
        if payload.scope is Scope.live:
            raise TypeError(f"{payload.event_type} is live-only; use emit()")
        seq = self._state.next_seq
        self._state.check_payload(seq, payload)
        event = make_event(payload, seq, self._clock())
        self._state.apply(event)
        self._events.append(event)
        self._notify(event)
        return event

    def emit(self, payload: Payload) -> LiveEvent:
        """Send a live-only event to subscribers; it is never stored."""
        event = make_live_event(payload, self._clock())
        self._notify(event)
        return event

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns the function that removes it."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def _notify(self, event: Event | LiveEvent) -> None:
        for subscriber in tuple(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                log.exception(
                    "session %s: subscriber %r failed on %s", self.id, subscriber, event.type
                )

    async def flush(self) -> None:
        """Hand every unacknowledged event to the store and wait until it is durable.

        On failure the events stay pending here (the store keeps none of the batch) and the next
        flush sends them again; the store's error propagates.
        """
        if self._store is None:
            self._durable = len(self._events)
            return
        # Shielded: a caller cancelled mid-flush (a cancelled turn) must not leave the store with a
        # staged batch this log does not know was written; the next flush waits for this one.
        await asyncio.shield(self._flush_locked(self._store))

    async def _flush_locked(self, store: SessionStore) -> None:
        async with self._flush_lock:
            end = len(self._events)
            if end == self._durable:
                return
            await store.append(self.id, self._events[self._durable : end])
            await store.flush(self.id)
            self._durable = end
