"""ACP's optional session methods Trellis offers beside `session/load` and `session/list`:
`session/resume` (load without the replay), `session/close` (cancel, then let go) and
`session/delete` (a stored session, never one that is open)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from app.acp import rpc
from app.acp.core import AcpServer
from engine.events import TurnEnd, UserMessage
from engine.gateway.scripted import Reply
from engine.store.errors import UnknownSessionError
from tests.acp.peer import Peer
from tests.acp.test_core import _new, _prompt, _until, workspace
from tests.acp.test_load_opening import BOUND, stored_session
from tests.checkpoints.conftest import checkpoint_refs

__all__ = ["workspace"]


def _opening(session_id: str, workspace: Path) -> dict[str, object]:
    return {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}


async def test_initialize_offers_resume_close_and_delete(server: AcpServer) -> None:
    capabilities = (await Peer(server).initialize())["agentCapabilities"]["sessionCapabilities"]
    assert capabilities == {"list": {}, "resume": {}, "close": {}, "delete": {}}


async def test_resume_replays_nothing_and_prompts_go_on_in_the_same_log(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.extend([[Reply(text="first")], [Reply(text="second")]])
    session_id = await stored_session(server, workspace)
    peer = Peer(server)
    await peer.initialize()
    answer = await asyncio.wait_for(
        peer.request("session/resume", _opening(session_id, workspace)), BOUND
    )
    assert answer["result"].keys() == {"modes"}
    assert peer.text(session_id, "user_message_chunk") == ""  # nothing replayed
    assert peer.text(session_id) == ""
    await _until(
        lambda: (
            "available_commands_update" in [u["sessionUpdate"] for u in peer.updates(session_id)]
        )
    )
    result = await peer.result("session/prompt", _prompt(session_id, "more"))
    assert result["stopReason"] == "end_turn"
    assert peer.text(session_id) == "second"
    session = server.sessions.get(session_id)
    assert session is not None
    assert session.agent is not None
    stored = await session.agent.read_log(0, len(session.agent.log))
    assert [e.data.content for e in stored if isinstance(e.data, UserMessage)] == ["hi", "more"]


async def test_resume_checks_the_cwd_as_load_does(server: AcpServer, workspace: Path) -> None:
    session_id = await stored_session(server, workspace)
    other = workspace / "sub"
    other.mkdir()
    peer = Peer(server)
    await peer.initialize()
    answer = await peer.request("session/resume", _opening(session_id, other))
    assert answer["error"]["code"] == -32602
    assert f"belongs to {workspace}" in answer["error"]["message"]
    unknown = await peer.request("session/resume", _opening("nope", workspace))
    assert unknown["error"]["code"] == rpc.UNKNOWN_SESSION


async def test_close_cancels_the_running_prompt_then_lets_the_session_go(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(text="word " * 400, chunk_delay=0.01)])
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    running = await peer.start("session/prompt", _prompt(session_id, "talk"))
    await _until(lambda: len(peer.text(session_id)) > 10)
    closed = await peer.start("session/close", {"sessionId": session_id})
    assert (await asyncio.wait_for(running, BOUND))["result"]["stopReason"] == "cancelled"
    assert (await asyncio.wait_for(closed, BOUND))["result"] == {}
    # answered in that order: the prompt's answer is not written after the close's
    assert peer.sent.index(await running) < peer.sent.index(await closed)
    assert server.sessions.get(session_id) is None  # its only holder let go: the Agent is gone
    after = await peer.request("session/prompt", _prompt(session_id, "again"))
    assert after["error"]["code"] == rpc.UNKNOWN_SESSION
    again = await peer.request("session/close", {"sessionId": session_id})
    assert again["error"]["code"] == rpc.UNKNOWN_SESSION
    store = await server.sessions.store()
    events = (await store.inspect(session_id)).events
    assert [e.data.reason for e in events if isinstance(e.data, TurnEnd)] == ["cancelled"]


async def test_close_leaves_a_session_another_connection_holds(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.extend([[Reply(text="first")], [Reply(text="for the other")]])
    session_id = await stored_session(server, workspace)
    first, second = Peer(server, "first"), Peer(server, "second")
    for peer in (first, second):
        await peer.initialize()
        answer = await peer.request("session/resume", _opening(session_id, workspace))
        assert answer["result"].keys() == {"modes"}
    assert await first.result("session/close", {"sessionId": session_id}) == {}
    assert server.sessions.get(session_id) is not None
    assert (await second.result("session/prompt", _prompt(session_id, "still here")))[
        "stopReason"
    ] == "end_turn"
    assert second.text(session_id) == "for the other"
    assert first.text(session_id) == ""  # its feed stopped with the close


async def test_delete_removes_a_stored_session_but_never_an_open_one(
    server: AcpServer, workspace: Path
) -> None:
    session_id = await stored_session(server, workspace)
    peer = Peer(server)
    await peer.initialize()
    await peer.request("session/resume", _opening(session_id, workspace))
    busy = await peer.request("session/delete", {"sessionId": session_id})
    assert busy["error"]["code"] == rpc.SESSION_BUSY
    assert "session/close" in busy["error"]["message"]
    assert await peer.result("session/close", {"sessionId": session_id}) == {}
    assert await peer.result("session/delete", {"sessionId": session_id}) == {}
    listed = await peer.result("session/list", {})
    assert session_id not in [s["sessionId"] for s in listed["sessions"]]
    store = await server.sessions.store()
    try:
        await store.info(session_id)
    except UnknownSessionError:
        pass
    else:
        raise AssertionError("the session is still stored")
    gone = await peer.request("session/delete", {"sessionId": session_id})
    assert gone["error"]["code"] == rpc.UNKNOWN_SESSION


async def test_delete_refuses_a_session_outside_the_served_roots(
    server: AcpServer, workspace: Path, tmp_path: Path
) -> None:
    store = await server.sessions.store()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    info = await store.create(cwd=str(elsewhere))
    peer = Peer(server)
    await peer.initialize()
    answer = await peer.request("session/delete", {"sessionId": info.id})
    assert answer["error"]["code"] == rpc.UNKNOWN_SESSION
    assert (await store.info(info.id)).id == info.id  # still there


async def test_resume_answers_the_mode_the_session_was_left_in(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    """Found by acpx (tests/acp/test_acpx.py), which resumes rather than loads: the answer's
    `modes` must name the stored session's mode, as a load's does, not the default."""
    replies.append([Reply(text="first")])
    writer = Peer(server, "writer")
    await writer.initialize()
    session_id = await _new(writer, workspace)
    await writer.result("session/prompt", _prompt(session_id, "hi"))
    await writer.result("session/set_mode", {"sessionId": session_id, "modeId": "read-only"})
    await writer.connection.aclose()
    peer = Peer(server)
    await peer.initialize()
    answer = await peer.result("session/resume", _opening(session_id, workspace))
    assert answer["modes"]["currentModeId"] == "read-only"


async def test_delete_prunes_the_sessions_checkpoints(server: AcpServer, workspace: Path) -> None:
    from engine.checkpoints import CheckpointStore, Unavailable
    from engine.config import CheckpointsConfig
    from engine.paths import data_dir

    session_id = await stored_session(server, workspace)
    checkpoints = await CheckpointStore.open(workspace, data_dir(), CheckpointsConfig(), session_id)
    assert not isinstance(checkpoints, Unavailable), checkpoints
    (workspace / "a.txt").write_text("a\n")
    await checkpoints.take("a turn")

    assert checkpoint_refs(checkpoints.shadow_dir) == [f"refs/trellis/{session_id}/1"]
    peer = Peer(server)
    await peer.initialize()
    assert await peer.result("session/delete", {"sessionId": session_id}) == {}
    assert checkpoint_refs(checkpoints.shadow_dir) == []
