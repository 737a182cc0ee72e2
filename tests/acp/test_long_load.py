"""`session/load` of a long session: the log is read by range, a `READ_CHUNK` at a time, and the
loop runs other work between ranges, so neither memory nor other connections' wait grows with the
log."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from app.acp import rpc
from app.acp.core import AcpOptions, AcpServer
from app.acp.sessions import AcpSession
from engine.config import Config
from engine.events import Event, UserMessage, make_event
from engine.session import READ_CHUNK
from engine.store.sqlite.store import SQLiteStore
from replay.acp import AcpProjection
from tests.acp.long_session import EVENTS_PER_TURN, store_session
from tests.acp.peer import Peer


async def test_a_long_load_goes_out_range_by_range_with_the_loop_free_between(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    db = tmp_path / "sessions.sqlite"
    turns = 2 * READ_CHUNK // EVENTS_PER_TURN + 10  # three ranges
    session_id = await store_session(db, workspace, turns)

    ranges: list[tuple[int, int]] = []
    read = AcpSession.read

    async def recorded(self: AcpSession, start: int, end: int) -> Sequence[Event]:
        ranges.append((start, end))
        return await read(self, start, end)

    monkeypatch.setattr(AcpSession, "read", recorded)
    server = AcpServer(AcpOptions(store_path=db, roots=[workspace], config=Config()))
    peer = Peer(server)
    await peer.initialize()
    ticks: list[int] = []  # how many messages the peer had each time the loop ran another task

    async def tick() -> None:
        while True:
            ticks.append(len(peer.sent))
            await asyncio.sleep(0)

    ticker = asyncio.create_task(tick())
    try:
        answer = await peer.request(
            "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
        )
    finally:
        ticker.cancel()
        await server.aclose()
    assert answer["result"].keys() == {"modes"}
    events = 1 + turns * EVENTS_PER_TURN
    assert ranges == [
        (start, min(events, start + READ_CHUNK)) for start in range(0, events, READ_CHUNK)
    ]
    updates = [i for i, m in enumerate(peer.sent) if m.get("method") == "session/update"]
    assert len(peer.updates(session_id)) >= turns * 7
    first, last = updates[0], updates[-1]
    assert any(first < count <= last for count in ticks), "nothing else ran during the replay"
    user_words = [
        u["content"]["text"]
        for u in peer.updates(session_id)
        if u["sessionUpdate"] == "user_message_chunk"
    ]
    assert user_words == [
        f"read notes/{turn}.md and tell me what it says" for turn in range(1, turns + 1)
    ]


async def test_a_replayed_update_over_the_size_limit_is_logged_and_the_rest_go_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The translator keeps every update below the limit; should one still exceed it, the
    encoded range drops it (logged) and sends the others in order, as `_frame` does."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    db = tmp_path / "sessions.sqlite"
    session_id = await store_session(db, workspace, 3)
    async with SQLiteStore(db) as store:
        # one update far larger than the load's answer (its `modes`), so the limit below it
        # still lets the answer through
        await store.acquire(session_id)
        stored = await store.read(session_id)
        long = UserMessage(content="many words " * 300)
        await store.append(session_id, [make_event(long, len(stored), float(len(stored)))])
        await store.flush(session_id)
        await store.release(session_id)
        events = await store.read(session_id)
    updates = list(AcpProjection(str(workspace.resolve())).replay(events))
    sizes = [len(frame) for frame in rpc.UpdateEncoder(session_id).encode(updates)]
    limit = max(sizes) - 1
    monkeypatch.setattr(rpc, "MAX_OUTGOING_BYTES", limit)
    server = AcpServer(AcpOptions(store_path=db, roots=[workspace], config=Config()))
    peer = Peer(server)
    await peer.initialize()
    try:
        with caplog.at_level(logging.ERROR, logger="app.acp.protocol"):
            answer = await peer.request(
                "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
            )
    finally:
        await server.aclose()
    assert answer["result"].keys() == {"modes"}
    kept = [update for update, size in zip(updates, sizes, strict=True) if size <= limit]
    assert 0 < len(kept) < len(updates)
    assert peer.updates(session_id)[: len(kept)] == kept
    assert f"a {max(sizes)}-byte session/update was not sent" in caplog.text
