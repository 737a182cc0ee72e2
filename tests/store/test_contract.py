"""The `SessionStore` contract: every store implementation must pass this suite unchanged."""

from __future__ import annotations

import os

import pytest

from engine.events import (
    ModelBind,
    SessionTitle,
    StepEnd,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
    make_event,
)
from engine.invariants import INTERRUPTED_TOOL_RESULT
from engine.session import Session
from engine.store.base import SessionStore
from engine.store.errors import (
    AmbiguousSessionError,
    ForkPointError,
    LeaseError,
    SequenceError,
    ShortPrefixError,
    StoreError,
    UnknownSessionError,
)
from tests.store.conftest import StoreFactory, full_turn, inject, open_turn, step


async def new_session(store: SessionStore, cwd: str = "/w", **kwargs: str) -> Session:
    info = await store.create(cwd=cwd, **kwargs)
    return Session(info.id, store)


async def test_create_and_info(store: SessionStore) -> None:
    info = await store.create(cwd="/w", title="t", model="m", session_id="abc")
    assert (info.id, info.cwd, info.title, info.model, info.event_count) == (
        "abc",
        "/w",
        "t",
        "m",
        0,
    )
    assert await store.info("abc") == info
    generated = await store.create(cwd="/w")
    assert len(generated.id) == 32
    assert generated.id != "abc"


async def test_create_refuses_a_taken_id(store: SessionStore) -> None:
    await store.create(cwd="/w", session_id="abc")
    with pytest.raises(StoreError, match="abc"):
        await store.create(cwd="/x", session_id="abc")


async def test_flushed_events_read_back_equal(store: SessionStore) -> None:
    session = await new_session(store)
    full_turn(session, calls=2)
    inject(session)
    await session.flush()
    assert await store.read(session.id) == list(session.held)
    info = await store.info(session.id)
    assert info.event_count == len(session.held)


async def test_staged_events_are_invisible_until_flushed(store: SessionStore) -> None:
    session = await new_session(store)
    full_turn(session)
    await store.append(session.id, session.held)
    assert await store.read(session.id) == []
    await store.flush()
    assert len(await store.read(session.id)) == len(session.held)
    await store.flush()  # nothing staged: nothing happens


async def test_append_refuses_gaps_overlaps_and_broken_invariants(store: SessionStore) -> None:
    session = await new_session(store)
    full_turn(session)
    events = list(session.held)
    with pytest.raises(SequenceError, match="seq"):
        await store.append(session.id, events[1:])
    await store.append(session.id, events[:3])
    with pytest.raises(SequenceError, match="seq"):
        await store.append(session.id, events[2:])
    dangling_end = make_event(TurnEnd(turn=1, reason="completed"), 3, 0.0)  # step 1 still open
    with pytest.raises(SequenceError, match="turn/end while step 1 is open"):
        await store.append(session.id, [dangling_end])
    await store.append(session.id, events[3:])  # the refused batches staged nothing
    await store.flush(session.id)
    assert await store.read(session.id) == events


async def test_title_and_model_events_update_the_session(store: SessionStore) -> None:
    session = await new_session(store, model="a")
    session.append(SessionTitle(title="Fix the build"))
    session.append(ModelBind(model="b", grant_epoch=1))
    await session.flush()
    info = await store.info(session.id)
    assert (info.title, info.model, info.event_count) == ("Fix the build", "b", 2)
    assert info.updated > info.created


async def test_a_second_writer_is_refused_naming_the_holder(store_factory: StoreFactory) -> None:
    first, second = await store_factory(), await store_factory()
    session = await new_session(first)
    with pytest.raises(LeaseError, match=rf"{session.id}.*process {os.getpid()}"):
        await second.load(session.id)
    with pytest.raises(LeaseError, match=session.id):
        await second.append(session.id, [make_event(TurnStart(turn=1), 0, 0.0)])
    await first.release(session.id)
    loaded = await second.load(session.id)
    assert loaded.events == ()
    with pytest.raises(LeaseError):
        await first.append(session.id, [make_event(TurnStart(turn=1), 0, 0.0)])


async def test_load_repairs_an_open_turn_and_commits_the_repair(
    store_factory: StoreFactory,
) -> None:
    writer = await store_factory()
    session = await new_session(writer)
    full_turn(session)
    turn = open_turn(session)
    step(session, turn, calls=3, results=1)
    await session.flush()
    flushed = list(session.held)
    await writer.release(session.id)

    reader = await store_factory()
    loaded = await reader.load(session.id)
    assert loaded.events[: len(flushed)] == tuple(flushed)
    assert loaded.events[len(flushed) :] == loaded.repaired
    kinds = [type(e.data) for e in loaded.repaired]
    assert kinds == [ToolResultRecord, ToolResultRecord, StepEnd, TurnEnd]
    results = [e.data for e in loaded.repaired[:2]]
    assert all(isinstance(r, ToolResultRecord) and r.is_error for r in results)
    assert [r.content for r in results if isinstance(r, ToolResultRecord)] == [
        INTERRUPTED_TOOL_RESULT
    ] * 2
    end = loaded.repaired[-1].data
    assert isinstance(end, TurnEnd)
    assert (end.turn, end.reason) == (2, "interrupted")
    assert [e.seq for e in loaded.events] == list(range(len(loaded.events)))
    assert loaded.info.event_count == len(loaded.events)

    resumed = Session(session.id, reader, loaded.events)  # the repaired log is writable
    full_turn(resumed)
    await resumed.flush()
    await reader.release(session.id)
    again = await writer.load(session.id)
    assert again.repaired == ()
    assert again.events == tuple(resumed.held)


async def test_acquire_leases_and_repairs_without_the_log_and_reopen_continues_it(
    store_factory: StoreFactory,
) -> None:
    writer = await store_factory()
    session = await new_session(writer)
    full_turn(session)
    full_turn(session)
    turn = open_turn(session, "during the crash")
    step(session, turn, calls=2, results=1)
    await session.flush()
    await writer.release(session.id)

    reader = await store_factory()
    info = await reader.acquire(session.id)
    with pytest.raises(LeaseError, match=session.id):
        await writer.acquire(session.id)
    stored = await reader.inspect(session.id)
    assert stored.repaired == ()  # the repair is committed, as `load` commits it
    assert [type(e.data) for e in stored.events[len(session.held) :]] == [
        ToolResultRecord,
        StepEnd,
        TurnEnd,
    ]
    assert info.event_count == len(stored.events)

    followed: list[int] = []
    resumed = await Session.reopen(session.id, reader, follow=lambda e: followed.append(e.seq))
    assert followed == list(range(info.event_count))
    assert (list(resumed.held), resumed.held_from, resumed.pending) == ([], info.event_count, 0)
    assert list(await resumed.read(0, info.event_count)) == list(stored.events)
    full_turn(resumed)  # the next turn is 4: the writer's position came from the last turn
    await resumed.flush()
    after = await reader.inspect(session.id)
    assert after.events[info.event_count :] == tuple(resumed.held)
    assert [e.data.turn for e in after.events if isinstance(e.data, TurnStart)] == [1, 2, 3, 4]


async def test_acquire_on_a_log_without_turns_continues_it(store: SessionStore) -> None:
    session = await new_session(store)
    inject(session, "a note")
    await session.flush()
    await store.release(session.id)
    info = await store.acquire(session.id)
    resumed = await Session.reopen(session.id, store, follow=lambda e: None)
    assert resumed.next_seq == info.event_count == 1
    full_turn(resumed)
    await resumed.flush()
    log = await store.read(session.id)
    assert [e.seq for e in log] == list(range(1 + len(resumed.held)))
    assert [e.data.turn for e in log if isinstance(e.data, TurnStart)] == [1]


async def test_an_out_of_turn_message_at_the_tail_is_kept(store: SessionStore) -> None:
    session = await new_session(store)
    full_turn(session)
    inject(session, "context for later")
    await session.flush()
    await store.release(session.id)
    loaded = await store.load(session.id)
    assert loaded.repaired == ()
    assert loaded.events == tuple(session.held)


async def test_inspect_repairs_in_memory_without_a_lease(store_factory: StoreFactory) -> None:
    writer, reader = await store_factory(), await store_factory()
    session = await new_session(writer)
    turn = open_turn(session)
    step(session, turn, calls=1, results=0)
    await session.flush()
    inspected = await reader.inspect(session.id)  # the writer still holds the lease
    assert [e.type for e in inspected.repaired] == ["tool/result", "step/end", "turn/end"]
    assert inspected.events == (*session.held, *inspected.repaired)
    assert inspected.info.event_count == len(session.held)
    assert (await reader.info(session.id)).event_count == len(session.held)  # nothing written
    assert await reader.inspect(session.id) == inspected  # the same view at every reading


async def test_range_reads_show_the_repaired_tail_inspect_shows(
    store_factory: StoreFactory,
) -> None:
    """A viewer paging a crashed session sees the tail a full load sees, and nothing is written."""
    writer, reader = await store_factory(), await store_factory()
    session = await new_session(writer)
    full_turn(session)
    last_turn = session.state.next_seq
    turn = open_turn(session)
    step(session, turn, calls=2, results=1)
    await session.flush()
    stored = len(session.held)
    view = list((await reader.inspect(session.id)).events)
    assert [e.type for e in view[stored:]] == ["tool/result", "step/end", "turn/end"]
    assert await reader.read(session.id) == view
    assert await reader.read(session.id, last_turn) == view[last_turn:]
    assert await reader.read(session.id, stored + 1, stored + 1) == [view[stored + 1]]
    assert await reader.read(session.id, 0, stored - 1) == view[:stored]  # before the repair
    assert await reader.read(session.id, len(view)) == []
    assert await reader.read_last_turns(session.id, 1) == view[last_turn:]
    assert await reader.read_last_turns(session.id, 2) == view
    assert (await reader.info(session.id)).event_count == stored  # nothing written


async def test_range_reads_of_a_closed_log_add_nothing(store: SessionStore) -> None:
    session = await new_session(store)
    full_turn(session)
    inject(session, "after the turn")
    await session.flush()
    assert await store.read(session.id) == list(session.held)
    assert await store.read_last_turns(session.id, 1) == list(session.held)


async def test_read_ranges_are_inclusive(store: SessionStore) -> None:
    session = await new_session(store)
    full_turn(session)
    await session.flush()
    events = list(session.held)
    assert await store.read(session.id, 2, 4) == events[2:5]
    assert await store.read(session.id, 3) == events[3:]
    assert await store.read(session.id, len(events)) == []
    assert await store.read(session.id, 4, 2) == []
    with pytest.raises(ValueError, match="start"):
        await store.read(session.id, -1)


async def test_read_last_turns(store: SessionStore) -> None:
    session = await new_session(store)
    inject(session, "before any turn")
    starts = []
    for n in range(3):
        starts.append(session.state.next_seq)
        full_turn(session, f"prompt {n}")
    inject(session, "after the last turn")
    await session.flush()
    events = list(session.held)
    assert await store.read_last_turns(session.id, 1) == events[starts[2] :]
    assert await store.read_last_turns(session.id, 2) == events[starts[1] :]
    assert await store.read_last_turns(session.id, 10) == events
    with pytest.raises(ValueError, match="turns"):
        await store.read_last_turns(session.id, 0)


async def test_list_is_newest_first_filtered_and_paged(store: SessionStore) -> None:
    ids = []
    for n in range(5):
        session = await new_session(store, cwd="/a" if n % 2 == 0 else "/b")
        session.append(UserMessage(content=f"m{n}"))
        await session.flush()
        ids.append(session.id)
    first = await store.list(limit=2)
    assert [s.id for s in first.sessions] == ids[::-1][:2]
    assert first.next_cursor is not None
    seen = list(first.sessions)
    cursor: str | None = first.next_cursor
    while cursor is not None:
        page = await store.list(limit=2, cursor=cursor)
        seen.extend(page.sessions)
        cursor = page.next_cursor
    assert [s.id for s in seen] == ids[::-1]
    in_a = await store.list(cwd="/a")
    assert [s.id for s in in_a.sessions] == [ids[4], ids[2], ids[0]]
    assert in_a.next_cursor is None
    with pytest.raises(ValueError, match="cursor"):
        await store.list(cursor="not a cursor")


async def test_fork_at_a_turn_end_and_after_an_out_of_turn_message(store: SessionStore) -> None:
    session = await new_session(store, title="first")
    session.append(ModelBind(model="a", grant_epoch=1))
    full_turn(session)
    after_turn = session.state.next_seq
    session.append(ModelBind(model="b", grant_epoch=2))
    inject(session)
    after_inject = session.state.next_seq
    full_turn(session)
    await session.flush()

    fork = await store.fork(session.id, after_turn)
    assert (fork.parent_id, fork.fork_seq, fork.event_count) == (session.id, after_turn, after_turn)
    assert (fork.cwd, fork.title, fork.model) == ("/w", "first", "a")  # b came after the fork
    assert await store.read(fork.id) == list(session.held[:after_turn])
    assert await store.info(fork.id) == fork

    later = await store.fork(session.id, after_inject)
    assert later.model == "b"
    loaded = await store.load(later.id)  # a fork is an ordinary, writable session
    resumed = Session(later.id, store, loaded.events)
    full_turn(resumed)
    await resumed.flush()
    assert len(await store.read(later.id)) == len(resumed.held)
    assert len(await store.read(session.id)) == len(session.held)


async def test_fork_refuses_a_bad_point(store: SessionStore) -> None:
    session = await new_session(store)
    full_turn(session)
    turn = open_turn(session)
    step(session, turn)
    session.append(UserMessage(content="steering"))  # inside the open turn
    await session.flush()
    count = len(session.held)
    for at_seq in (0, count + 1):
        with pytest.raises(ForkPointError, match=rf"seq {at_seq}"):
            await store.fork(session.id, at_seq)
    with pytest.raises(ForkPointError, match=r"seq 3.*step/start"):
        await store.fork(session.id, 3)
    with pytest.raises(ForkPointError, match="inside an open turn"):
        await store.fork(session.id, count)


async def test_delete(store_factory: StoreFactory) -> None:
    store, other = await store_factory(), await store_factory()
    kept = await new_session(store)
    session = await new_session(store)
    full_turn(session)
    await session.flush()
    with pytest.raises(LeaseError, match=session.id):
        await other.delete(session.id)
    await store.delete(session.id)
    assert [s.id for s in (await store.list()).sessions] == [kept.id]
    with pytest.raises(UnknownSessionError):
        await store.read(session.id)


async def test_sessions_count_their_turns(store: SessionStore) -> None:
    session = await new_session(store)
    inject(session)
    full_turn(session)
    after_first = session.state.next_seq
    full_turn(session)
    open_turn(session)
    await session.flush()
    assert (await store.info(session.id)).turns == 3
    (listed,) = (await store.list()).sessions
    assert listed.turns == 3
    fork = await store.fork(session.id, after_first)
    assert fork.turns == 1
    assert (await store.info(fork.id)).turns == 1


async def test_a_unique_id_prefix_finds_its_session(store: SessionStore) -> None:
    ids = ["abcc123", "abdd456", "abdd789", "abdd7", "abc"]
    for sid in ids:
        await store.create(cwd="/w", session_id=sid)
    assert (await store.resolve("abcc")).id == "abcc123"
    assert (await store.resolve("abdd45")).id == "abdd456"
    assert (await store.resolve("abdd7")).id == "abdd7"  # an exact id wins over longer ones
    assert (await store.resolve("abdd78")).id == "abdd789"
    assert await store.resolve("abcc123") == await store.info("abcc123")
    assert (await store.resolve("abc")).id == "abc"  # a whole id, however short
    with pytest.raises(AmbiguousSessionError, match=r"'abdd'.*abdd456, abdd7, abdd789"):
        await store.resolve("abdd")
    for missing in ("abee", "abcc1234"):
        with pytest.raises(UnknownSessionError, match=repr(missing)):
            await store.resolve(missing)
    # fewer than 4 characters name a session by chance: `trellis delete a --yes`
    for short in ("ab", "a", ""):
        with pytest.raises(ShortPrefixError, match=f"{short!r} is too short: give at least 4"):
            await store.resolve(short)


async def test_unknown_ids_are_named(store: SessionStore) -> None:
    calls = [
        store.info("nope"),
        store.load("nope"),
        store.inspect("nope"),
        store.read("nope"),
        store.read_last_turns("nope", 1),
        store.fork("nope", 1),
        store.delete("nope"),
        store.append("nope", [make_event(TurnStart(turn=1), 0, 0.0)]),
    ]
    for call in calls:
        with pytest.raises(UnknownSessionError, match="nope"):
            await call


async def test_close_flushes_and_releases(store_factory: StoreFactory) -> None:
    store, other = await store_factory(), await store_factory()
    session = await new_session(store)
    full_turn(session)
    await store.append(session.id, session.held)
    await store.aclose()
    loaded = await other.load(session.id)
    assert loaded.events == tuple(session.held)
