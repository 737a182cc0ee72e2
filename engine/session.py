"""The in-memory log of one session: seq and time, invariants, subscribers, flushes to the store.

The event stream contract (docs/ARCHITECTURE.md, the one event log): `subscribe(fn, from_seq=N)`
delivers the stored events from N and then follows live with no gap and no duplicate;
`stream(from_seq)` is the same as an async iterator with a bounded queue for consumers that may fall
behind.

A session reopened from the store (`Session.reopen`) streams its stored log once, in chunks, through
the consumers that rebuild the working state (the Context, the grants, the invariants' position),
and holds only the events appended after; a stored session holds at most about `2 * HELD_TAIL`
durable events. A view that asks for older events (`read`, `chunks`, `subscribe_from`, `stream`)
reads them from the store by range.

A new session is stored lazily: it enters the store with its first `user/message` (the events
before it, a model binding, Areas, pins, are stored together with it), so opening a session and
leaving it without a word (a failed slash command) leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from engine.events import (
    Event,
    LiveEvent,
    Payload,
    Scope,
    SessionTitle,
    StreamOverflow,
    UserMessage,
    make_event,
    make_live_event,
)
from engine.gc_policy import gc_paused
from engine.invariants import InvariantError, LogState, check_storable
from engine.store.base import SessionStore
from engine.store.errors import StoreError

log = logging.getLogger(__name__)

Subscriber = Callable[[Event | LiveEvent], None]
"""Called inside `append`/`emit`, on the event loop: it must return quickly and never block."""

Immediate = Callable[[Event | LiveEvent], bool]
"""Offered each event as it happens while a `batches` consumer waits with nothing queued: True
when it handled the event then and there (it is not queued), False to leave it for the next
batch. Called inside `append`/`emit` like a subscriber: it must return quickly and never block."""

STREAM_QUEUE_SIZE = 10_000
"""How many events an `events()` consumer may fall behind before it gets `stream/overflow`."""

_CATCH_UP_CHUNK = 500
READ_CHUNK = 4_096
"""Events per range read of the stored log (resume, a rebind's replay, catch-up)."""

HELD_TAIL = 4_096
"""Durable events a stored session keeps in memory; once twice as many are held, the older half
is dropped (views read it from the store), so a long-running session holds a bounded tail."""

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
        self._held: list[Event] = list(events)
        self._start = 0  # the seq of the first held event; those before it are in the store only
        self._state = LogState.of(self._held)
        self._durable = len(self._held)  # the seq after the last event the store acknowledged
        self._subscribers: list[Subscriber] = []
        self._flush_lock = asyncio.Lock()
        self._create = create
        self._worded = any(isinstance(e.data, UserMessage) for e in self._held)
        self._titled = any(isinstance(e.data, SessionTitle) for e in self._held)

    @classmethod
    async def reopen(
        cls,
        session_id: str,
        store: SessionStore,
        *,
        follow: Callable[[Event], None],
        clock: Callable[[], float] = time.time,
    ) -> Session:
        """A stored session whose writer lease this store holds (`SessionStore.acquire`): its log
        is read by range, checked against the invariants (once: the lease did not check it) and
        passed to `follow` event by event, in chunks, and none of it is held. Raises
        `StoreError` for a log that breaks an invariant."""
        session = cls(session_id, store, clock=clock)
        state = session._state
        end = (await store.info(session_id)).event_count

        # The collector stays paused for the whole replay (bulk work that makes no cycles,
        # engine/gc_policy.py): re-enabled between chunks it would walk the growing Context
        # again and again.
        with gc_paused():
            while state.next_seq < end:
                last = min(end, state.next_seq + READ_CHUNK) - 1
                chunk = await store.read(session_id, state.next_seq, last)
                if not chunk:
                    break
                for event in chunk:
                    try:
                        state.check_payload(event.seq, event.data)
                    except InvariantError as exc:
                        raise StoreError(f"session {session_id!r} is corrupt: {exc}") from exc
                    state.apply(event)
                    kind = type(event.data)
                    session._worded = session._worded or kind is UserMessage
                    session._titled = session._titled or kind is SessionTitle
                    follow(event)
        if state.next_seq != end:
            raise StoreError(f"session {session_id!r}: {end} events stored, {state.next_seq} read")
        session._start = session._durable = end
        return session

    @property
    def stored(self) -> bool:
        """Whether the session is in the store (false without a store, and until a new
        session's first `user/message` was flushed)."""
        return self._store is not None and self._create is None

    @property
    def held(self) -> Sequence[Event]:
        """The events held in memory, from seq `held_from` on: the whole log of a session without
        a store; a stored one holds what it appended since it was opened, and of that the
        unflushed events and a tail of the durable ones (`HELD_TAIL`)."""
        return self._held

    @property
    def held_from(self) -> int:
        return self._start

    @property
    def titled(self) -> bool:
        """Whether the log carries a `session/title`."""
        return self._titled

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
        return self._state.next_seq - self._durable

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
        self._held.append(event)
        self._worded = self._worded or isinstance(payload, UserMessage)
        self._titled = self._titled or isinstance(payload, SessionTitle)
        self._notify(event)
        return event

    def emit(self, payload: Payload) -> LiveEvent:
        """Send a live-only event to subscribers; it is never stored."""
        event = make_live_event(payload, self._clock(), self._state.next_seq - 1)
        self._notify(event)
        return event

    async def read(self, start: int, end: int) -> Sequence[Event]:
        """The durable events with `start <= seq < end` (clamped to the log); those not held are
        read from the store."""
        start, end = max(start, 0), min(max(end, 0), self._state.next_seq)
        if start >= end:
            return ()
        # the held part first: a flush may drop older held events while the store is read
        held, first_held = self._held[max(start - self._start, 0) : end - self._start], self._start
        if start >= first_held:
            return held
        assert self._store is not None  # only a stored session holds less than its log
        return [*await self._store.read(self.id, start, min(end, first_held) - 1), *held]

    async def chunks(self, start: int = 0) -> AsyncIterator[Sequence[Event]]:
        """The log from `start` to its end, in chunks read by range; it ends at the log's end as
        it stands after the last chunk (no await between that check and the caller's next step)."""
        next_seq = max(start, 0)
        while next_seq < self._state.next_seq:
            chunk = await self._read_some(next_seq, next_seq + READ_CHUNK)
            next_seq += len(chunk)
            yield chunk

    def subscribe(
        self, subscriber: Subscriber, *, from_seq: int | None = None
    ) -> Callable[[], None]:
        """Add a subscriber; returns the function that removes it.

        With `from_seq` the stored events from that seq are delivered first, inside this call, and
        live events follow: no gap and no duplicate, because appends happen on this loop only.
        Only held events can be delivered inside the call (`ValueError` for an earlier
        `from_seq`); `subscribe_from` catches up from any seq.
        """
        if from_seq is not None:
            if from_seq < self._start:
                raise ValueError(
                    f"session {self.id}: events before seq {self._start} are not held; "
                    "catch up with subscribe_from"
                )
            self._catch_up(subscriber, self._held[from_seq - self._start :])
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    async def subscribe_from(self, subscriber: Subscriber, from_seq: int) -> Callable[[], None]:
        """`subscribe(subscriber, from_seq=...)` from any seq: the events not held are read from
        the store and delivered first, then the held ones and live ones follow as `subscribe`
        delivers them, with no gap and no duplicate."""
        next_seq = max(from_seq, 0)
        while next_seq < self._start:
            chunk = await self._read_some(next_seq, min(self._start, next_seq + READ_CHUNK))
            self._catch_up(subscriber, chunk)
            next_seq += len(chunk)
        return self.subscribe(subscriber, from_seq=next_seq)

    def _catch_up(self, subscriber: Subscriber, events: Sequence[Event]) -> None:
        for event in events:
            try:
                subscriber(event)
            except Exception:
                log.exception("session %s: subscriber %r failed on catch-up", self.id, subscriber)

    async def _read_some(self, start: int, end: int) -> Sequence[Event]:
        """`read`, refusing a store that returns nothing where the log has events (a loop over
        the log would not advance)."""
        chunk = await self.read(start, end)
        if not chunk:
            raise StoreError(f"session {self.id!r}: the store returned no events from seq {start}")
        return chunk

    async def stream(
        self, from_seq: int = 0, *, max_queue: int = STREAM_QUEUE_SIZE
    ) -> AsyncIterator[Event | LiveEvent]:
        """Every durable event from `from_seq`, then live events as they happen: `batches`, one
        event at a time."""
        async for batch in self.batches(from_seq, max_queue=max_queue):
            for event in batch:
                yield event

    async def batches(
        self,
        from_seq: int = 0,
        *,
        max_queue: int = STREAM_QUEUE_SIZE,
        immediate: Immediate | None = None,
    ) -> AsyncIterator[Sequence[Event | LiveEvent]]:
        """`stream` in batches: the durable events from `from_seq` a range at a time, then each
        time everything that happened since the consumer last took (never an empty batch), so a
        consumer that fell behind takes what waits in one go, and one that keeps up gets each
        event as soon as it happens.

        With `immediate`, an event that happens while the consumer waits for its next batch with
        nothing queued is offered to it first, inside the append: a consumer that can handle it
        at once (a bridge whose client can take a message now) does so without a wake-up of its
        task and a turn of the loop per event. Order holds: once an event is queued, the later
        ones queue behind it until the consumer has taken them.

        Catch-up reads the log in chunks while what happens meanwhile waits in a queue of
        `max_queue` events. A consumer that falls that far behind what it last took gets
        `stream/overflow {last_seq}` and then the durable events from there again, read from the
        log: memory stays bounded and no durable event is lost (the live-only events of the gap
        are).
        """
        next_seq = max(from_seq, 0)
        while True:
            # Subscribe first: everything from `boundary` on reaches the follower, in order, while
            # the events before it are read from the log.
            follower = _Follower(max_queue, immediate)
            unsubscribe = self.subscribe(follower)
            boundary = self._state.next_seq
            try:
                while next_seq < boundary:
                    chunk = tuple(
                        await self.read(next_seq, min(boundary, next_seq + _CATCH_UP_CHUNK))
                    )
                    if chunk:
                        next_seq = chunk[-1].seq + 1
                        yield chunk
                while batch := await follower.take():
                    for item in reversed(batch):
                        if isinstance(item, Event):
                            next_seq = item.seq + 1
                            break
                    yield batch
            finally:
                unsubscribe()
            next_seq = max(next_seq, follower.handled)
            last = next_seq - 1
            yield (make_live_event(StreamOverflow(last_seq=last), self._clock(), last),)

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
        store = self._store
        if store is None:
            self._durable = self._state.next_seq
            return
        if self._create is None and getattr(store, "flush_runs_to_its_end", False):
            # The store finishes a write its caller's cancellation interrupts and passes the
            # cancellation on at the next await, after `_flush_locked` has recorded the write:
            # no shield, whose task would cost each flush two more turns of the loop.
            await self._flush_locked(store)
            return
        # Shielded: a caller cancelled mid-flush (a cancelled turn) must not leave the store with a
        # staged batch this log does not know was written, nor a session created that this log
        # does not know exists; the next flush waits for this one.
        await asyncio.shield(self._flush_locked(store))

    async def _flush_locked(self, store: SessionStore) -> None:
        async with self._flush_lock:
            end = self._state.next_seq
            if end == self._durable:
                return
            if self._create is not None:
                if not self._worded:
                    return  # nothing the user said yet: no session to store
                await self._create()
                self._create = None
            await store.append(self.id, self._held[self._durable - self._start : end - self._start])
            await store.flush(self.id)
            self._durable = end
            excess = end - self._start - HELD_TAIL
            if excess >= HELD_TAIL:
                del self._held[:excess]
                self._start += excess


class _Follower:
    """A bounded queue fed by a subscription; it stops taking events once it overflowed. While
    its consumer waits with nothing queued, each event is offered to `immediate` first."""

    def __init__(self, max_queue: int, immediate: Immediate | None = None) -> None:
        self._queue: list[Event | LiveEvent] = []
        self._max = max_queue
        self._immediate = immediate
        self._waiter: asyncio.Future[None] | None = None  # set while the consumer waits
        self.overflowed = False
        self.handled = 0
        """The seq after the last durable event `immediate` handled."""

    def __call__(self, event: Event | LiveEvent) -> None:
        if self.overflowed:
            return
        waiter = self._waiter
        if waiter is not None and self._immediate is not None and self._immediate(event):
            if isinstance(event, Event):
                self.handled = event.seq + 1
            return
        if len(self._queue) >= self._max:
            self.overflowed = True
        else:
            self._queue.append(event)
        if waiter is not None:
            self._waiter = None  # what comes next queues behind this until it is taken
            if not waiter.done():
                waiter.set_result(None)

    async def take(self) -> list[Event | LiveEvent]:
        """Everything queued, at least one event, once there is some; empty once the queue
        overflowed and what it held was taken."""
        while not self._queue:
            if self.overflowed:
                return []
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        taken, self._queue = self._queue, []
        return taken
