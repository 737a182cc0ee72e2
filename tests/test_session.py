"""Session: seq and time, checked appends, subscribers, and flushes that lose and repeat nothing."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

import pytest

import engine.session
from engine.events import (
    AgentStatus,
    AssistantMessage,
    Event,
    LiveEvent,
    ModelBind,
    PinAdd,
    StepStart,
    TurnEnd,
    TurnStart,
    UserMessage,
    make_event,
)
from engine.invariants import InvariantError, UnstorableEventError
from engine.session import Session
from engine.store.base import SessionStore
from engine.store.errors import StoreError
from engine.store.sqlite.store import SQLiteStore


class FlushFailed(Exception):
    """The fake store's simulated write failure."""


class RecordingStore:
    """The two `SessionStore` methods a Session uses, with the protocol's all-or-nothing flush.

    `hold_append` and `hold_flush`, when set, hold that call until they open, so a test can act
    while a flush is inside the store; `waiting` tells the test a call got there.
    """

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.staged: list[Event] = []
        self.committed: list[Event] = []
        self.flushes = 0
        self.fail_next_flush = False
        self.hold_append: asyncio.Event | None = None
        self.hold_flush: asyncio.Event | None = None
        self.waiting = asyncio.Event()

    async def append(self, session_id: str, events: Sequence[Event]) -> None:
        assert session_id == "s1"
        if self.hold_append is not None:
            self.waiting.set()
            await self.hold_append.wait()
        self.batches.append([e.seq for e in events])
        self.staged.extend(events)

    async def flush(self, session_id: str | None = None) -> None:
        if self.hold_flush is not None:
            self.waiting.set()
            await self.hold_flush.wait()
        self.flushes += 1
        staged, self.staged = self.staged, []
        if self.fail_next_flush:
            self.fail_next_flush = False
            raise FlushFailed("disk full")
        self.committed.extend(staged)

    @property
    def committed_seqs(self) -> list[int]:
        return [e.seq for e in self.committed]


def as_store(store: RecordingStore) -> SessionStore:
    """The fake implements only what a Session calls; the rest of the protocol is not needed."""
    return cast(SessionStore, store)


def ticking_clock(start: float = 1000.0) -> Iterator[float]:
    value = start
    while True:
        yield value
        value += 0.5


def make_session(store: RecordingStore | None = None) -> Session:
    clock = ticking_clock()
    return Session("s1", as_store(store) if store else None, clock=lambda: next(clock))


# --- appends --------------------------------------------------------------------------------------


def test_append_assigns_seq_and_time() -> None:
    session = make_session()
    first = session.append(UserMessage(content="hello"))
    second = session.append(TurnStart(turn=1))
    assert (first.seq, first.time, first.type) == (0, 1000.0, "user/message")
    assert (second.seq, second.time, second.type) == (1, 1000.5, "turn/start")
    assert list(session.held) == [first, second]
    assert session.pending == 2
    assert session.state.open_turn == 1


def test_subscribers_see_each_event_after_it_is_appended_in_order() -> None:
    session = make_session()
    seen: list[tuple[str, int, int]] = []

    def subscriber(name: str) -> None:
        def receive(event: Event | LiveEvent) -> None:
            assert isinstance(event, Event)
            seen.append((name, event.seq, len(session.held)))

        session.subscribe(receive)

    subscriber("a")
    subscriber("b")
    session.append(UserMessage(content="x"))
    session.append(UserMessage(content="y"))
    # each subscriber is called once the event is in the log, in subscription order
    assert seen == [("a", 0, 1), ("b", 0, 1), ("a", 1, 2), ("b", 1, 2)]


def test_a_raising_subscriber_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    session = make_session()
    received: list[int] = []

    def broken(event: Event | LiveEvent) -> None:
        raise RuntimeError("subscriber bug")

    session.subscribe(broken)
    session.subscribe(lambda e: received.append(cast(Event, e).seq))
    with caplog.at_level(logging.ERROR, logger="engine.session"):
        event = session.append(UserMessage(content="x"))
    assert event.seq == 0
    assert received == [0]
    assert list(session.held) == [event]
    assert "subscriber" in caplog.text
    assert "user/message" in caplog.text
    assert "subscriber bug" in caplog.text  # the traceback is kept


def test_unsubscribe_stops_delivery() -> None:
    session = make_session()
    received: list[str] = []
    unsubscribe = session.subscribe(lambda e: received.append(e.type))
    session.append(UserMessage(content="x"))
    unsubscribe()
    unsubscribe()  # a second call is harmless
    session.append(UserMessage(content="y"))
    assert received == ["user/message"]


def test_invariant_error_appends_nothing_and_notifies_no_one() -> None:
    session = make_session()
    session.append(TurnStart(turn=1))
    received: list[Event | LiveEvent] = []
    session.subscribe(received.append)
    before = (list(session.held), session.pending, session.state)

    with pytest.raises(InvariantError) as caught:
        session.append(TurnStart(turn=2))
    assert caught.value.seq == 1
    with pytest.raises(InvariantError, match="outside a step"):
        session.append(AssistantMessage(turn=1, step=1, content="early"))

    assert (list(session.held), session.pending, session.state) == before
    assert received == []
    # the next valid event takes the seq the refused one would have had
    assert session.append(TurnEnd(turn=1, reason="completed")).seq == 1


async def test_an_event_that_cannot_be_stored_is_refused_and_later_flushes_go_on() -> None:
    store = RecordingStore()
    session = make_session(store)
    session.append(TurnStart(turn=1))
    received: list[Event | LiveEvent] = []
    session.subscribe(received.append)
    before = (list(session.held), session.pending, session.state)

    with pytest.raises(UnstorableEventError, match="user/message cannot be stored") as caught:
        session.append(UserMessage(content="caf\udce9"))  # a lone surrogate: no JSON holds it
    assert isinstance(caught.value, InvariantError)
    assert caught.value.seq == 1

    assert (list(session.held), session.pending, session.state) == before
    assert received == []
    session.append(UserMessage(content="caf\\xe9"))
    await session.flush()
    assert store.committed_seqs == [0, 1]


def test_state_is_a_copy() -> None:
    session = make_session()
    session.append(TurnStart(turn=1))
    state = session.state
    state.open_turn = None
    with pytest.raises(InvariantError, match="turn/start while turn 1"):
        session.append(TurnStart(turn=2))


def test_live_events_reach_subscribers_but_never_the_log() -> None:
    session = make_session()
    received: list[Event | LiveEvent] = []
    session.subscribe(received.append)
    live = session.emit(AgentStatus(status="running"))
    assert isinstance(live, LiveEvent)
    assert (live.type, live.time) == ("agent/status", 1000.0)
    assert received == [live]
    assert list(session.held) == []
    assert session.pending == 0
    assert session.append(UserMessage(content="x")).seq == 0


def test_the_wrong_kind_of_payload_is_refused() -> None:
    session = make_session()
    with pytest.raises(TypeError, match="live-only"):
        session.append(AgentStatus(status="idle"))
    with pytest.raises(TypeError, match="not a live"):
        session.emit(UserMessage(content="x"))
    assert list(session.held) == []


def test_opening_on_stored_events_continues_them() -> None:
    stored = [
        make_event(UserMessage(content="a"), 0, 1.0),
        make_event(TurnStart(turn=1), 1, 2.0),
        make_event(StepStart(turn=1, step=1), 2, 3.0),
    ]
    session = Session("s1", None, stored, clock=lambda: 9.0)
    assert session.pending == 0
    assert (session.state.open_turn, session.state.open_step) == (1, 1)
    with pytest.raises(InvariantError, match="turn/end while step 1"):
        session.append(TurnEnd(turn=1, reason="completed"))
    assert session.append(UserMessage(content="b")).seq == 3


def test_opening_on_an_invalid_log_is_refused() -> None:
    with pytest.raises(InvariantError, match="seq must be 0"):
        Session("s1", None, [make_event(UserMessage(content="a"), 4, 1.0)])


async def test_reopening_a_log_that_breaks_an_invariant_is_refused(tmp_path: Path) -> None:
    """Reopening checks the stored log once, as it streams it (the lease reads only its tail)."""
    async with SQLiteStore(tmp_path / "s.sqlite") as store:
        info = await store.create(cwd="/w")
        session = Session(info.id, store)
        session.append(UserMessage(content="a"))
        session.append(TurnStart(turn=1))
        session.append(TurnEnd(turn=1, reason="completed"))
        session.append(TurnStart(turn=2))
        session.append(TurnEnd(turn=2, reason="completed"))
        await session.flush()
        await store.release(info.id)
        with sqlite3.connect(store.path) as conn:  # turn 1 becomes turn 3
            conn.execute("UPDATE events SET data = json_set(data, '$.turn', 3) WHERE seq IN (1, 2)")
        await store.acquire(info.id)
        with pytest.raises(StoreError, match=r"corrupt: invariant violated at seq 1"):
            await Session.reopen(info.id, store, follow=lambda e: None)


class FlushingWhileReading(SQLiteStore):
    """A store whose first range read lets the writer flush (and drop held events) meanwhile."""

    session: Session | None = None

    async def read(self, session_id: str, start: int = 0, end: int | None = None) -> list[Event]:
        session, self.session = self.session, None
        if session is not None:
            for n in range(6):
                session.append(UserMessage(content=f"meanwhile {n}"))
            await session.flush()
        return await super().read(session_id, start, end)


async def test_a_read_across_the_held_tail_misses_nothing_a_flush_drops_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine.session, "HELD_TAIL", 4)
    reading = FlushingWhileReading(tmp_path / "s.sqlite")
    async with reading as store:
        session = Session((await store.create(cwd="/w")).id, store)
        for n in range(10):
            session.append(UserMessage(content=str(n)))
            await session.flush()
        start = session.held_from
        assert start > 2
        reading.session = session
        read = await session.read(start - 2, start + 3)
        assert [e.seq for e in read] == list(range(start - 2, start + 3))
        assert session.held_from > start  # the flush during the read dropped held events
        assert list(read) == await store.read(session.id, start - 2, start + 2)


# --- flushes --------------------------------------------------------------------------------------


async def test_flush_sends_exactly_the_pending_batch() -> None:
    store = RecordingStore()
    session = make_session(store)
    session.append(UserMessage(content="a"))
    session.append(TurnStart(turn=1))
    await session.flush()
    assert store.batches == [[0, 1]]
    assert store.committed == list(session.held)
    assert session.pending == 0

    await session.flush()  # nothing pending: the store is not called
    assert (store.batches, store.flushes) == ([[0, 1]], 1)

    session.append(TurnEnd(turn=1, reason="completed"))
    session.emit(AgentStatus(status="idle"))
    await session.flush()
    assert store.batches == [[0, 1], [2]]
    assert store.committed_seqs == [0, 1, 2]
    assert all(isinstance(e, Event) for e in store.committed)


async def test_a_failed_flush_keeps_events_pending_and_the_next_resends_them() -> None:
    store = RecordingStore()
    session = make_session(store)
    session.append(UserMessage(content="a"))
    session.append(UserMessage(content="b"))
    store.fail_next_flush = True
    with pytest.raises(FlushFailed):
        await session.flush()
    assert session.pending == 2
    assert store.committed == []

    session.append(UserMessage(content="c"))
    await session.flush()
    assert store.batches == [[0, 1], [0, 1, 2]]
    assert store.committed_seqs == [0, 1, 2]
    assert session.pending == 0


async def test_concurrent_flushes_do_not_duplicate() -> None:
    store = RecordingStore()
    store.hold_append = asyncio.Event()
    session = make_session(store)
    session.append(UserMessage(content="a"))
    session.append(UserMessage(content="b"))
    first = asyncio.create_task(session.flush())
    await store.waiting.wait()  # the first flush is inside the store with seqs 0 and 1
    session.append(UserMessage(content="c"))
    second = asyncio.create_task(session.flush())
    third = asyncio.create_task(session.flush())
    store.hold_append.set()
    await asyncio.gather(first, second, third)
    assert store.batches == [[0, 1], [2]]
    assert store.committed_seqs == [0, 1, 2]
    assert session.pending == 0


async def test_a_cancelled_flush_still_completes_and_is_not_repeated() -> None:
    """Cancelled between staging and flushing, the batch must not be staged a second time."""
    store = RecordingStore()
    store.hold_flush = asyncio.Event()
    session = make_session(store)
    session.append(UserMessage(content="a"))
    caller = asyncio.create_task(session.flush())
    await store.waiting.wait()  # the batch is staged, the store's flush is waiting
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    store.hold_flush.set()
    await session.flush()  # waits for the shielded write, then finds nothing pending
    assert store.batches == [[0]]
    assert store.committed_seqs == [0]
    assert session.pending == 0


class FinishingStore(RecordingStore):
    """Declares that a flush runs to its end: cancelled while held, it still writes, then
    passes the cancellation on (as the real stores do)."""

    flush_runs_to_its_end = True

    async def flush(self, session_id: str | None = None) -> None:
        cancelled = False
        while True:
            try:
                await asyncio.shield(super().flush(session_id))
                break
            except asyncio.CancelledError:
                cancelled = True  # the shielded write goes on: wait for it again
                if self.hold_flush is not None:
                    await self.hold_flush.wait()
        if cancelled and (task := asyncio.current_task()) is not None:
            task.cancel()


async def test_a_store_that_finishes_its_flush_is_awaited_without_a_shield() -> None:
    """The caller's cancellation arrives after the Session recorded the write, so nothing is
    pending when it does (behind a shield the caller is cancelled first)."""
    store = FinishingStore()
    store.hold_flush = asyncio.Event()
    session = make_session(store)
    session.append(UserMessage(content="a"))
    pending_at_cancel: list[int] = []

    async def flush() -> None:
        try:
            await session.flush()
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            pending_at_cancel.append(session.pending)
            raise

    caller = asyncio.create_task(flush())
    await store.waiting.wait()
    caller.cancel()
    await asyncio.sleep(0)
    store.hold_flush.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert pending_at_cancel == [0]
    assert store.committed_seqs == [0]


async def test_without_a_store_flush_only_marks_events_durable() -> None:
    session = make_session()
    session.append(UserMessage(content="a"))
    await session.flush()
    assert session.pending == 0


# --- a new session enters the store with its first user/message ----------------------------------


class Creation:
    """The `create` a new Session is given: counts its calls, fails while `fail` is set."""

    def __init__(self, store: RecordingStore) -> None:
        self.store = store
        self.calls = 0
        self.fail = False

    async def __call__(self) -> None:
        if self.fail:
            raise FlushFailed("database locked")
        assert self.store.batches == []  # created before anything is appended to it
        self.calls += 1


def unstored_session(store: RecordingStore, creation: Creation) -> Session:
    return Session("s1", as_store(store), create=creation)


async def test_a_new_session_keeps_its_events_until_the_first_user_message() -> None:
    store = RecordingStore()
    creation = Creation(store)
    session = unstored_session(store, creation)
    session.append(ModelBind(model="m", grant_epoch=1))
    session.append(PinAdd(pin_id="pin1", text="short answers"))
    await session.flush()
    assert (creation.calls, store.batches, session.pending, session.stored) == (0, [], 2, False)

    session.append(UserMessage(content="hello"))
    await session.flush()
    assert (creation.calls, store.batches, session.pending, session.stored) == (
        1,
        [[0, 1, 2]],
        0,
        True,
    )
    session.append(UserMessage(content="again"))
    await session.flush()
    assert (creation.calls, store.batches) == (1, [[0, 1, 2], [3]])


async def test_a_failed_creation_stores_nothing_and_the_next_flush_creates_it() -> None:
    store = RecordingStore()
    creation = Creation(store)
    session = unstored_session(store, creation)
    session.append(UserMessage(content="hello"))
    creation.fail = True
    with pytest.raises(FlushFailed):
        await session.flush()
    assert (store.batches, session.pending, session.stored) == ([], 1, False)
    creation.fail = False
    await session.flush()
    assert (creation.calls, store.committed_seqs, session.stored) == (1, [0], True)


def test_a_session_without_a_store_is_never_stored() -> None:
    session = make_session()
    session.append(UserMessage(content="hello"))
    assert not session.stored
    assert make_session(RecordingStore()).stored  # opened on a stored session
