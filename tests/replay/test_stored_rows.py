"""The rows every scenario's store holds decode, through the bulk reader a store loads with
(`decode_rows`), to the events the validating reader of untrusted input (`decode_event`, the whole
envelope through pydantic) makes of the same JSON (issue 11, fast loading). Every durable type,
from samples: `tests/test_event_rows.py`."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from engine.events import Event, decode_event, decode_rows
from tests.agent.conftest import FlakyStore, MakeAgent
from tests.replay.live_scenarios import NAMES, play


def _stored_rows(store: FlakyStore, session_id: str) -> list[tuple[int, float, str, str]]:
    """The session's rows as the file holds them, read past the store."""
    with closing(sqlite3.connect(store.path)) as conn:
        return conn.execute(
            "SELECT seq, time, type, data FROM events WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()


def _validated(rows: list[tuple[int, float, str, str]]) -> list[Event]:
    return [
        decode_event({"seq": seq, "time": time, "type": kind, "data": json.loads(data)})
        for seq, time, kind, data in rows
    ]


@pytest.mark.parametrize("name", NAMES)
async def test_stored_rows_decode_as_the_validating_reader_reads_them(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play(name, make_agent, store)
    await played.agent.aclose()
    rows = _stored_rows(store, played.agent.session_id)
    fast = decode_rows(rows)
    assert fast == _validated(rows)
    assert [type(e.data) for e in fast] == [type(e.data) for e in _validated(rows)]
    # and they write back as stored: nothing dropped or defaulted on the way in
    assert [json.loads(e.model_dump_json())["data"] for e in fast] == [
        json.loads(data) for _, _, _, data in rows
    ]
