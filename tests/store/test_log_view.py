"""What `load` and `inspect` derive from a stored log: `load` takes the writer's state from the
last turn alone, as `acquire` does, and that state is the whole log's; `inspect`, for viewers,
still checks every event and refuses a corrupt log."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.events import Payload, TurnEnd, TurnStart, UserMessage
from engine.invariants import InvariantError, LogState
from engine.session import Session
from engine.store.errors import StoreError
from engine.store.log_view import last_turn_state
from engine.store.sqlite.store import SQLiteStore
from tests.test_invariants import PROPERTY_SETTINGS, seal, valid_logs


@PROPERTY_SETTINGS
@given(valid_logs(), st.data())
def test_the_last_turns_state_is_the_whole_logs(log: list[Payload], data: st.DataObject) -> None:
    events = seal(log[: data.draw(st.integers(0, len(log)))])
    assert last_turn_state(events) == LogState.of(events)


async def test_inspect_refuses_a_corrupt_log_and_load_hands_it_to_a_session_that_does(
    tmp_path: Path,
) -> None:
    async with SQLiteStore(tmp_path / "s.sqlite") as store:
        info = await store.create(cwd="/w")
        session = Session(info.id, store)
        session.append(UserMessage(content="a"))
        for turn in (1, 2):
            session.append(TurnStart(turn=turn))
            session.append(TurnEnd(turn=turn, reason="completed"))
        await session.flush()
        await store.release(info.id)
        with sqlite3.connect(store.path) as conn:  # turn 1 becomes turn 3
            conn.execute("UPDATE events SET data = json_set(data, '$.turn', 3) WHERE seq IN (1, 2)")
        with pytest.raises(StoreError, match=r"is corrupt: invariant violated at seq 1"):
            await store.inspect(info.id)
        loaded = await store.load(info.id)  # the writer's position, from the last turn
        assert loaded.events[-1].seq == 4
        with pytest.raises(InvariantError, match=r"invariant violated at seq 1"):
            Session(info.id, store, loaded.events)
