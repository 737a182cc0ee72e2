"""`gc_paused`: the cyclic collector stays out of bulk decoding, and its state is given
back as it was (issue 11: on 100,000 events it made loading about three times slower)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import engine.store.log_view as log_view_module
from engine.events import Event, decode_rows
from engine.gc_policy import TurnFreeze, gc_paused
from engine.session import Session
from engine.store.sqlite.store import SQLiteStore
from tests.store.conftest import full_turn


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_inside_and_enabled_after(collector_on: None) -> None:
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still runs
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled(collector_on: None) -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_overlapping_blocks_in_threads_enable_it_once_the_last_ends(collector_on: None) -> None:
    entered, leave = threading.Event(), threading.Event()

    def other() -> None:
        with gc_paused():
            entered.set()
            leave.wait()

    thread = threading.Thread(target=other)
    thread.start()
    entered.wait()
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's block has not ended
    leave.set()
    thread.join()
    assert gc.isenabled()


async def test_loading_decodes_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector_on: None
) -> None:
    seen: list[bool] = []

    def recording(rows: list[tuple[int, float, str, str]]) -> list[Event]:
        seen.append(gc.isenabled())
        return decode_rows(rows)

    monkeypatch.setattr(log_view_module, "decode_rows", recording)
    async with SQLiteStore(tmp_path / "s.sqlite") as store:
        info = await store.create(cwd="/w")
        session = Session(info.id, store)
        full_turn(session)
        await session.flush()
        loaded = await store.load(info.id)
    assert loaded.events == tuple(session.held)
    assert seen == [False]
    assert gc.isenabled()


def test_a_turn_collector_freezes_while_held_and_thaws_everything_at_release() -> None:
    gc.unfreeze()
    turn = TurnFreeze()
    turn.grown()  # not held: nothing is frozen
    assert gc.get_freeze_count() == 0
    try:
        turn.hold()
        held = gc.get_freeze_count()
        assert held > 0
        grown: list[list[int]] = [[] for _ in range(1000)]  # lists are tracked by the collector
        turn.grown()
        assert gc.get_freeze_count() >= held + len(grown)
    finally:
        turn.release()
    assert gc.get_freeze_count() == 0
    turn.release()  # released twice: no harm
    assert not turn.holding
