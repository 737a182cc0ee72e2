"""`session/load` answers before the session's Agent is open (`app.acp.opening`): a prompt sent at
once waits for it, a cancel while it waits stops it, an Agent that cannot open is told to the
client, and a connection that goes while it opens gives the lease back."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from app.acp import rpc
from app.acp.core import AcpServer
from engine.agent import open_agent
from engine.events import UserMessage
from engine.gateway.scripted import Reply
from engine.store.errors import StoreError
from engine.store.sqlite.store import SQLiteStore
from tests.acp.peer import Peer
from tests.acp.test_core import _new, _prompt, workspace
from tests.waiting import until

__all__ = ["workspace"]

BOUND = 30.0
"""Upper bound of a wait for an answer: a bound, not a measure."""


class Gate:
    """Holds every opening of a stored session's Agent until `open()`."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.waiting = 0

    def open(self) -> None:
        self.event.set()


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Gate:
    made = Gate()
    real = open_agent

    async def gated(**kwargs: Any) -> Any:
        if kwargs.get("session_id") is not None:
            made.waiting += 1
            await made.event.wait()
        return await real(**kwargs)

    monkeypatch.setattr("app.acp.sessions.open_agent", gated)
    return made


async def stored_session(server: AcpServer, workspace: Path) -> str:
    """A session with one turn ("hi"), its connection gone (so its Agent is disposed)."""
    writer = Peer(server, "writer")
    session_id = await _new(writer, workspace)
    assert (await writer.result("session/prompt", _prompt(session_id, "hi")))[
        "stopReason"
    ] == "end_turn"
    await writer.connection.aclose()
    return session_id


async def load(peer: Peer, session_id: str, workspace: Path) -> dict[str, Any]:
    await peer.initialize()
    params = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    return await asyncio.wait_for(peer.request("session/load", params), BOUND)


def kinds(peer: Peer, session_id: str) -> list[str]:
    return [u["sessionUpdate"] for u in peer.updates(session_id)]


async def test_load_answers_before_the_agent_opens_and_a_prompt_sent_at_once_waits_for_it(
    server: AcpServer, workspace: Path, replies: list[list[Reply]], gate: Gate
) -> None:
    replies.extend([[Reply(text="first")], [Reply(text="after the opening")]])
    session_id = await stored_session(server, workspace)
    peer = Peer(server)
    answer = await load(peer, session_id, workspace)
    assert answer["result"].keys() == {"modes"}
    assert peer.text(session_id, "user_message_chunk") == "hi"  # replayed from the store
    await until(
        lambda: gate.waiting == 1, "the turn waits at the gate"
    )  # the opening started after the answer, and waits
    prompt = await peer.start("session/prompt", _prompt(session_id, "and now?"))
    await asyncio.sleep(0.05)
    assert not prompt.done()
    assert "config_option_update" not in kinds(peer, session_id)  # it names the Agent's model
    gate.open()
    assert (await asyncio.wait_for(prompt, BOUND))["result"]["stopReason"] == "end_turn"
    assert peer.text(session_id).endswith("after the opening")
    at = peer.sent.index(answer)
    assert "config_option_update" in [
        m["params"]["update"]["sessionUpdate"]
        for m in peer.sent[at:]
        if m.get("method") == "session/update"
    ]
    replayed = [
        m["params"]["update"] for m in peer.sent[:at] if m.get("method") == "session/update"
    ]
    assert [u["content"]["text"] for u in replayed if "content" in u] == ["hi", "first"]


async def test_a_cancel_while_the_agent_opens_answers_the_waiting_prompt_cancelled(
    server: AcpServer, workspace: Path, replies: list[list[Reply]], gate: Gate
) -> None:
    replies.extend([[Reply(text="first")], [Reply(text="never")]])
    session_id = await stored_session(server, workspace)
    peer = Peer(server)
    assert (await load(peer, session_id, workspace))["result"].keys() == {"modes"}
    prompt = await peer.start("session/prompt", _prompt(session_id, "stop this"))
    session = server.sessions.get(session_id)
    assert session is not None
    await until(
        lambda: gate.waiting == 1 and session.prompting is not None, "the prompt waits at the gate"
    )  # it waits
    await peer.cancel(session_id)
    gate.open()
    assert (await asyncio.wait_for(prompt, BOUND))["result"]["stopReason"] == "cancelled"
    assert "never" not in peer.text(session_id)
    assert session.agent is not None
    stored = await session.agent.read_log(0, len(session.agent.log))
    assert [e.data.content for e in stored if isinstance(e.data, UserMessage)] == ["hi"]


async def test_an_agent_that_cannot_open_is_told_to_the_client_and_refuses_prompts(
    server: AcpServer,
    workspace: Path,
    replies: list[list[Reply]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    replies.append([Reply(text="first")])
    session_id = await stored_session(server, workspace)

    async def broken(**kwargs: Any) -> Any:
        raise StoreError(f"session {kwargs['session_id']!r} is corrupt: seq 3 out of order")

    monkeypatch.setattr("app.acp.sessions.open_agent", broken)
    release = SQLiteStore.release

    async def slow_release(store: SQLiteStore, session_id: str) -> None:
        await asyncio.sleep(0.2)  # the failure must not be told before the lease is back
        await release(store, session_id)

    monkeypatch.setattr(SQLiteStore, "release", slow_release)
    peer = Peer(server)
    assert (await load(peer, session_id, workspace))["result"].keys() == {"modes"}
    assert peer.text(session_id, "user_message_chunk") == "hi"
    await until(lambda: "could not be opened" in peer.text(session_id), "the failed opening said")
    assert "is corrupt: seq 3 out of order" in peer.text(session_id)
    refused = await peer.request("session/prompt", _prompt(session_id, "still there?"))
    assert refused["error"]["code"] == rpc.REFUSED
    assert "could not be opened for prompts" in refused["error"]["message"]
    assert "is corrupt" in refused["error"]["message"]
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as other:  # lease given back
        assert (await other.acquire(session_id)).id == session_id
        await release(other, session_id)


async def test_a_connection_that_goes_while_the_agent_opens_gives_the_lease_back(
    server: AcpServer, workspace: Path, replies: list[list[Reply]], gate: Gate, tmp_path: Path
) -> None:
    replies.append([Reply(text="first")])
    session_id = await stored_session(server, workspace)
    peer = Peer(server)
    assert (await load(peer, session_id, workspace))["result"].keys() == {"modes"}
    await until(lambda: gate.waiting == 1, "the turn waits at the gate")
    await peer.connection.aclose()
    assert server.sessions.get(session_id) is None
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as other:
        assert (await other.acquire(session_id)).id == session_id
        await other.release(session_id)
