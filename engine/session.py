"""The in-memory log of one session: seq and time, invariants, subscribers, flushes to the store.

The event stream contract (DESIGN.md, "Agent"): `subscribe(fn, from_seq=N)` delivers the stored events
from N and then follows live with no gap and no duplicate; `stream(from_seq)` is the same as an async
iterator with a bounded queue for consumers that may fall behind.

A new session is stored lazily: it enters the store with its first `user/message` (the events
before it, a model binding, Areas, pins, are stored together with it), so opening a session and
leaving it without a word (a failed slash command) leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from engine.events import (
    Event,
    LiveEvent,
    Payload,
    Scope,
    StreamOverflow,
    UserMessage,
    make_event,
    make_live_event,
)
from engine.invariants import LogState, check_storable
from engine.store.base import SessionStore

log = logging.getLogger(__name__)

Subscriber = Callable[[Event | LiveEvent], None]
"""Called inside `append`/`emit`, on the event loop: it must return quickly and never block."""

STREAM_QUEUE_SIZE = 10_000
"""How many events an `events()` consumer may fall behind before it gets `stream/overflow`."""

_CATCH_UP_CHUNK = 500

Create = Callable[[], Awaitable[object]]
"""Creates the session in the store (with its id, leased to this writer)."""


class Session:
    """Appends are synchronous and checked; `flush()` makes them durable in one batch.

    Subscribers are called after each append, in subscription order; one that raises is logged and
    does not stop the others or the append.

    With `create` the session is not in the store yet: flushes keep the events in memory until
    one of them is a `user/message`; that flush calls `create`, then stores them all.
    """

    def __init__(
        self,
        session_id: str,
        store: SessionStore | None = None,
        events: Sequence[Event] = (),
        *,
        clock: Callable[[], float] = time.time,
        create: Create | None = None,
    ) -> None:
        self.id = session_id
        self._store = store
        self._clock = clock
        self._events: list[Event] = list(events)
        self._state = LogState.of(self._events)
        self._durable = len(self._events)
        self._subscribers: list[Subscriber] = []
        self._flush_lock = asyncio.Lock()
        self._create = create
        self._worded = any(isinstance(e.data, UserMessage) for e in self._events)

    @property
    def stored(self) -> bool:
        """Whether the session is in the store (false without a store, and until a new
        session's first `user/message` was flushed)."""
        return self._store is not None and self._create is None

    @property
    def events(self) -> Sequence[Event]:
        return self._events

    @property
    def state(self) -> LogState:
        """The log's position (open turn and step); a copy, so callers cannot bend it."""
        return self._state.copy()

    @property
    def next_seq(self) -> int:
        return self._state.next_seq

    @property
    def pending(self) -> int:
        """Events appended but not yet acknowledged by the store."""
        return len(self._events) - self._durable

    def append(self, payload: Payload) -> Event:
        """Check and append one durable event; raises `InvariantError` (`UnstorableEventError` for
        one that cannot be serialized) and appends nothing."""
        if payload.scope is Scope.live:
            raise TypeError(f"{payload.event_type} is live-only; use emit()")
        seq = self._state.next_seq
        self._state.check_payload(seq, payload)
        event = make_event(payload, seq, self._clock())
        check_storable(event)  # an event the store cannot write would wedge every later flush
        self._state.apply(event)
        self._events.append(event)
        self._worded = self._worded or isinstance(payload, UserMessage)
        self._notify(event)
        return event

    def emit(self, payload: Payload) -> LiveEvent:
        """Send a live-only event to subscribers; it is never stored."""
        event = make_live_event(payload, self._clock(), self._state.next_seq - 1)
        self._notify(event)
        return event

    def read(self, start: int, end: int) -> Sequence[Event]:
        """The durable events with `start <= seq < end` (clamped to the log)."""
        return self._events[max(start, 0) : max(end, 0)]

    def subscribe(
        self, subscriber: Subscriber, *, from_seq: int | None = None
    ) -> Callable[[], None]:
        """Add a subscriber; returns the function that removes it.

        With `from_seq` the stored events from that seq are delivered first, inside this call, and
        live events follow: no gap and no duplicate, because appends happen on this loop only.
        """
        if from_seq is not None:
            for event in self._events[max(from_seq, 0) :]:
                try:
                    subscriber(event)
                except Exception:
                    log.exception(
                        "session %s: subscriber %r failed on catch-up", self.id, subscriber
                    )
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    async def stream(
        self, from_seq: int = 0, *, max_queue: int = STREAM_QUEUE_SIZE
    ) -> AsyncIterator[Event | LiveEvent]:
        """Every durable event from `from_seq`, then live events as they happen.

        Catch-up reads the log in chunks while what happens meanwhile waits in a queue of
        `max_queue` events. A consumer that falls that far behind gets `stream/overflow
        {last_seq}` and then the durable events from there again, read from the log: memory stays
        bounded and no durable event is lost (the live-only events of the gap are).
        """
        next_seq = max(from_seq, 0)
        while True:
            # Subscribe first: everything from `boundary` on reaches the follower, in order, while
            # the events before it are read from the log.
            follower = _Follower(max_queue)
            unsubscribe = self.subscribe(follower)
            boundary = self._state.next_seq
            try:
                while next_seq < boundary:
                    for event in tuple(
                        self.read(next_seq, min(boundary, next_seq + _CATCH_UP_CHUNK))
                    ):
                        next_seq = event.seq + 1
                        yield event
                while (item := await follower.next()) is not None:
                    if isinstance(item, Event):
                        next_seq = item.seq + 1
                    yield item
            finally:
                unsubscribe()
            last = next_seq - 1
            yield make_live_event(StreamOverflow(last_seq=last), self._clock(), last)

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
        flush sends them again; the store's error propagates. A session not yet created keeps
        its events pending until it holds a `user/message`.
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
            if self._create is not None:
                if not self._worded:
                    return  # nothing the user said yet: no session to store
                await self._create()
                self._create = None
            await store.append(self.id, self._events[self._durable : end])
            await store.flush(self.id)
            self._durable = end


class _Follower:
    """A bounded queue fed by a subscription; it stops taking events once it overflowed."""

    def __init__(self, max_queue: int) -> None:
        self._queue: deque[Event | LiveEvent] = deque()
        self._max = max_queue
        self._ready = asyncio.Event()
        self.overflowed = False

    def __call__(self, event: Event | LiveEvent) -> None:
        if self.overflowed:
            return
        if len(self._queue) >= self._max:
            self.overflowed = True
        else:
            self._queue.append(event)
        self._ready.set()

    async def next(self) -> Event | LiveEvent | None:
        """The next event; None once the queue overflowed and what it held was taken."""
        while not self._queue:
            if self.overflowed:
                return None
            self._ready.clear()
            await self._ready.wait()
        return self._queue.popleft()
