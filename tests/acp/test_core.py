"""The ACP core without processes: an in-process peer drives `AcpConnection.receive`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.acp import rpc
from app.acp.core import AcpOptions, AcpServer
from engine.config import Config
from engine.context.log_items import LINK_ONLY
from engine.gateway.scripted import Reply, ScriptedGateway
from tests.acp.peer import Peer
from tests.agent.conftest import call


@pytest.fixture
def workspace(workspace: Path) -> Path:
    """The workspace with a file to read."""
    (workspace / "hello.txt").write_text("hello there\n")
    return workspace


async def _new(peer: Peer, workspace: Path) -> str:
    await peer.initialize()
    result = await peer.result("session/new", {"cwd": str(workspace), "mcpServers": []})
    return str(result["sessionId"])


async def test_initialize_offers_version_1_load_embedded_context_and_list(
    server: AcpServer,
) -> None:
    peer = Peer(server)
    result = await peer.initialize()
    assert result["protocolVersion"] == 1
    capabilities = result["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert capabilities["promptCapabilities"]["embeddedContext"] is True
    assert capabilities["sessionCapabilities"]["list"] == {}
    assert result["agentInfo"]["name"] == "trellis"


async def test_new_answers_first_then_sends_the_command_registry(
    server: AcpServer, workspace: Path
) -> None:
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    answer_at = next(i for i, m in enumerate(peer.sent) if m.get("result", {}).get("sessionId"))
    await asyncio.sleep(0)
    commands = [
        (i, u)
        for i, u in enumerate(peer.sent)
        if u.get("method") == "session/update"
        and u["params"]["update"]["sessionUpdate"] == "available_commands_update"
    ]
    assert commands
    index, message = commands[0]
    assert index > answer_at
    names = {c["name"] for c in message["params"]["update"]["availableCommands"]}
    assert {"inject", "model", "compact", "pin"} <= names
    assert not names & {"quit", "exit"}, "an editor closes its sessions itself"
    assert message["params"]["sessionId"] == session_id


async def test_a_prompt_streams_its_reply_and_ends_the_turn(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(text="Hello from the script")])
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    result = await peer.result(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
    )
    assert result["stopReason"] == "end_turn"
    chunks = [
        u["content"]["text"]
        for u in peer.updates(session_id)
        if u["sessionUpdate"] == "agent_message_chunk"
    ]
    # nothing held back to be joined: with nothing waiting, each delta is its own chunk, written
    # from inside the engine's event callback (no wake-up of the feed per delta)
    assert chunks == ["Hello ", "from ", "the ", "script"]
    assert peer.written_at_once >= len(chunks)
    kinds = [u["sessionUpdate"] for u in peer.updates(session_id)]
    assert "usage_update" in kinds
    answer = next(i for i, m in enumerate(peer.sent) if m.get("result") == result)
    last_update = max(i for i, m in enumerate(peer.sent) if m.get("method") == "session/update")
    assert last_update < answer


class _StalledPeer(Peer):
    """A client that reads no `session/update` until `reading` is set: the transport's send
    waits, as a WebSocket's does for a client that does not read."""

    def __init__(self, server: AcpServer) -> None:
        super().__init__(server)
        self.reading = asyncio.Event()
        self.reading.set()
        self.waited = asyncio.Event()

    def ready(self) -> bool:
        return self.reading.is_set()

    async def _receive(self, text: str) -> None:
        if '"session/update"' in text and not self.reading.is_set():
            self.waited.set()
            await self.reading.wait()
        await super()._receive(text)


async def test_a_client_that_fell_behind_gets_the_same_text_in_fewer_chunks(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    """The deltas that waited while the client read nothing go out joined, in order; the
    thought and the message stay apart."""
    words = "word " * 200
    replies.append([Reply(text=words, reasoning="think " * 50)])
    peer = _StalledPeer(server)
    session_id = await _new(peer, workspace)
    await _until(lambda: len(peer.updates(session_id)) == 3)  # the opening notes
    peer.reading.clear()
    answer = await peer.start("session/prompt", _prompt(session_id, "go"))
    await peer.waited.wait()
    session = server.sessions.get(session_id)
    assert session is not None
    assert session.agent is not None
    await session.agent.when_idle()  # the whole reply waits for the client
    peer.reading.set()
    assert (await answer)["result"]["stopReason"] == "end_turn"
    assert peer.text(session_id, "agent_thought_chunk") == "think " * 50
    assert peer.text(session_id) == words
    kinds = [u["sessionUpdate"] for u in peer.updates(session_id)]
    streamed = [k for k in kinds if k in ("agent_thought_chunk", "agent_message_chunk")]
    # the client stalled on the title; then the reply, joined by kind
    assert streamed == ["agent_thought_chunk", "agent_message_chunk"]


def _prompt(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


async def _until(predicate: Callable[[], bool]) -> None:
    for _ in range(20_000):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the condition never held")


def _tool_updates(peer: Peer, call_id: str) -> list[dict[str, Any]]:
    return [
        u
        for u in peer.updates()
        if u["sessionUpdate"] in ("tool_call", "tool_call_update") and u["toolCallId"] == call_id
    ]


async def _stored(server: AcpServer, session_id: str) -> list[Any]:
    store = await server.sessions.store()
    return list((await store.inspect(session_id)).events)


@pytest.mark.parametrize(
    ("option", "status", "exists"),
    [("allow_once", "completed", True), ("reject_once", "failed", False)],
)
async def test_a_tool_needing_permission_asks_the_client(
    server: AcpServer,
    workspace: Path,
    replies: list[list[Reply]],
    option: str,
    status: str,
    exists: bool,
) -> None:
    replies.append(
        [
            Reply(tool_calls=[call("write_file", "w1", path="out.txt", content="new text")]),
            Reply(text="done"),
        ]
    )
    peer = Peer(server)

    async def answer(_: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": option}}

    peer.permission = answer
    session_id = await _new(peer, workspace)
    result = await peer.result("session/prompt", _prompt(session_id, "write it"))
    assert result["stopReason"] == "end_turn"
    (asked,) = peer.permission_requests
    tool_call = asked["params"]["toolCall"]
    assert tool_call["toolCallId"] == "w1"
    assert tool_call["kind"] == "edit"
    # the question leaves the content to the whole file's diff the client already holds
    assert "content" not in tool_call
    assert {o["kind"] for o in asked["params"]["options"]} == {
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    }
    updates = _tool_updates(peer, "w1")
    assert updates[0]["sessionUpdate"] == "tool_call"
    assert updates[0]["locations"] == [{"path": str(workspace / "out.txt")}]
    # the tool_call reached the client before the question about it
    first_call = next(
        i
        for i, m in enumerate(peer.sent)
        if m.get("method") == "session/update" and m["params"]["update"].get("toolCallId") == "w1"
    )
    assert first_call < peer.sent.index(asked)
    preview = next(
        m
        for m in peer.sent
        if m.get("method") == "session/update"
        and m["params"]["update"].get("toolCallId") == "w1"
        and m["params"]["update"].get("content", [{}])[0].get("type") == "diff"
        and m["params"]["update"]["sessionUpdate"] == "tool_call_update"
    )
    assert preview["params"]["update"]["content"] == [
        {"type": "diff", "path": str(workspace / "out.txt"), "oldText": None, "newText": "new text"}
    ]
    assert preview["params"]["update"]["locations"] == [
        {"path": str(workspace / "out.txt"), "line": 1}
    ]
    assert peer.sent.index(preview) < peer.sent.index(asked)
    assert updates[-1]["status"] == status
    assert (workspace / "out.txt").exists() is exists


async def test_cancel_mid_stream_sends_every_update_before_the_cancelled_answer(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(text="word " * 400, chunk_delay=0.01)])
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    answer = await peer.start("session/prompt", _prompt(session_id, "talk"))
    await _until(lambda: len(peer.text(session_id)) > 10)
    await peer.cancel(session_id)
    result = await answer
    assert result["result"]["stopReason"] == "cancelled"
    at = peer.sent.index(result)
    assert all("method" not in m or m["method"] != "session/update" for m in peer.sent[at + 1 :])
    events = await _stored(server, session_id)
    ends = [e.data for e in events if e.type == "turn/end"]
    assert ends[-1].reason == "cancelled"
    replies_stored = [e.data.content for e in events if e.type == "assistant/message"]
    assert peer.text(session_id) == replies_stored[-1]


async def test_a_cancel_right_behind_its_prompt_cancels_that_prompt(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    """A client may send `session/cancel` the moment after `session/prompt` (a stop pressed at
    once): the cancel reaches the core before the prompt's own task has run, and the prompt it
    follows must still answer `cancelled` without asking the model."""
    replies.append([Reply(text="the answer")])
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    answer = await peer.start("session/prompt", _prompt(session_id, "never mind"))
    await peer.cancel(session_id)
    assert (await asyncio.wait_for(answer, 10))["result"]["stopReason"] == "cancelled"
    assert peer.text(session_id) == ""
    # the cancel was for that prompt only: the next one runs
    assert (await peer.result("session/prompt", _prompt(session_id, "go")))[
        "stopReason"
    ] == "end_turn"
    assert peer.text(session_id) == "the answer"


async def test_a_cancel_right_behind_a_busy_prompt_leaves_the_next_one_alone(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    """A cancel is for the prompts sent before it: once they are answered it is spent."""
    replies.append([Reply(text="word " * 400, chunk_delay=0.01), Reply(text="later")])
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    running = await peer.start("session/prompt", _prompt(session_id, "talk"))
    await _until(lambda: len(peer.text(session_id)) > 10)
    refused = await peer.start("session/prompt", _prompt(session_id, "also"))
    await peer.cancel(session_id)
    assert (await running)["result"]["stopReason"] == "cancelled"
    assert (await refused)["error"]["code"] == rpc.SESSION_BUSY
    assert (await peer.result("session/prompt", _prompt(session_id, "again")))[
        "stopReason"
    ] == "end_turn"
    assert peer.text(session_id).endswith("later")


async def test_cancel_while_a_client_never_answers_permission_does_not_hang(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(tool_calls=[call("run_shell", "s1", command="echo hi")])])
    peer = Peer(server)

    async def never(_: dict[str, Any]) -> None:
        return None

    peer.permission = never
    session_id = await _new(peer, workspace)
    answer = await peer.start("session/prompt", _prompt(session_id, "run it"))
    await _until(lambda: bool(peer.permission_requests))
    await peer.cancel(session_id)
    assert (await answer)["result"]["stopReason"] == "cancelled"
    assert _tool_updates(peer, "s1")[-1]["status"] == "failed"


async def test_cancel_mid_tool_kills_it_and_reports_the_call(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(tool_calls=[call("run_shell", "s1", command="echo started; sleep 30")])])
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    answer = await peer.start("session/prompt", _prompt(session_id, "run it"))
    await _until(lambda: any(u.get("status") == "in_progress" for u in _tool_updates(peer, "s1")))
    await peer.cancel(session_id)
    assert (await answer)["result"]["stopReason"] == "cancelled"
    assert _tool_updates(peer, "s1")[-1]["status"] == "failed"


async def test_load_replays_the_whole_conversation_in_log_order_then_answers(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append(
        [
            Reply(text="reading", tool_calls=[call("read_file", "r1", path="hello.txt")]),
            Reply(text="it says hello"),
            Reply(text="second answer"),
        ]
    )
    first = Peer(server, "first")
    session_id = await _new(first, workspace)
    await first.result("session/prompt", _prompt(session_id, "read hello.txt"))
    await first.result("session/prompt", _prompt(session_id, "and again"))
    await first.connection.aclose()

    second = Peer(server, "second")
    await second.initialize()
    answer = await second.request(
        "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    )
    assert answer["result"].keys() == {"modes"}
    at = second.sent.index(answer)
    replayed = [
        m["params"]["update"] for m in second.sent[:at] if m.get("method") == "session/update"
    ]
    kinds = [u["sessionUpdate"] for u in replayed]
    assert kinds.count("user_message_chunk") == 2
    sequence = [
        (
            u["sessionUpdate"],
            u.get("content", {}).get("text")
            if isinstance(u.get("content"), dict)
            else u.get("toolCallId"),
        )
        for u in replayed
        if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk", "tool_call")
    ]
    assert sequence == [
        ("user_message_chunk", "read hello.txt"),
        ("agent_message_chunk", "reading"),
        ("tool_call", "r1"),
        ("agent_message_chunk", "it says hello"),
        ("user_message_chunk", "and again"),
        ("agent_message_chunk", "second answer"),
    ]
    result = next(
        u for u in replayed if u.get("toolCallId") == "r1" and u.get("status") == "completed"
    )
    assert "hello there" in result["content"][0]["content"]["text"]
    assert not second.permission_requests
    # the replay went out as the transport could take it: at once, no coroutine per message
    assert second.written_at_once >= len(replayed)


async def test_load_refuses_another_cwd_and_an_unknown_session(
    server: AcpServer, workspace: Path
) -> None:
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    await peer.result("session/prompt", _prompt(session_id, "hi"))
    other = workspace / "sub"
    other.mkdir()
    wrong = await peer.request(
        "session/load", {"sessionId": session_id, "cwd": str(other), "mcpServers": []}
    )
    assert wrong["error"]["code"] == -32602
    assert "cwd" in wrong["error"]["message"]
    unknown = await peer.request(
        "session/load", {"sessionId": "f" * 32, "cwd": str(workspace), "mcpServers": []}
    )
    assert unknown["error"]["code"] == -32002
    assert "f" * 32 in unknown["error"]["message"]


async def test_list_by_cwd_with_a_cursor(
    server: AcpServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.acp.lifecycle as lifecycle

    monkeypatch.setattr(lifecycle, "LIST_PAGE", 2)
    peer = Peer(server)
    ids = []
    for n in range(3):
        session_id = await _new(peer, workspace)
        await peer.result("session/prompt", _prompt(session_id, f"title {n}"))
        ids.append(session_id)
    first = await peer.result("session/list", {"cwd": str(workspace)})
    assert len(first["sessions"]) == 2
    assert first["nextCursor"]
    second = await peer.result(
        "session/list", {"cwd": str(workspace), "cursor": first["nextCursor"]}
    )
    listed = [s["sessionId"] for s in first["sessions"] + second["sessions"]]
    assert sorted(listed) == sorted(ids)
    assert {s["cwd"] for s in first["sessions"]} == {str(workspace)}
    bad = await peer.request("session/list", {"cursor": "not-a-cursor"})
    assert bad["error"]["code"] == -32602
    assert "cursor" in bad["error"]["message"]


async def test_a_prompt_to_a_running_session_gets_a_clear_error(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(text="slow " * 200, chunk_delay=0.01)])
    first = Peer(server, "first")
    session_id = await _new(first, workspace)
    running = await first.start("session/prompt", _prompt(session_id, "one"))
    await _until(lambda: bool(first.text(session_id)))
    second = Peer(server, "second")
    await second.initialize()
    await second.result(
        "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    )
    busy = await second.request("session/prompt", _prompt(session_id, "two"))
    assert busy["error"]["code"] == -32010
    assert "already running a prompt" in busy["error"]["message"]
    again = await first.request("session/prompt", _prompt(session_id, "three"))
    assert again["error"]["code"] == -32010
    await first.cancel(session_id)
    assert (await running)["result"]["stopReason"] == "cancelled"
    # the second connection saw the first one's turn live
    assert second.text(session_id)


async def test_a_dropped_connection_cancels_its_turn_which_is_stored(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(text="slow " * 200, chunk_delay=0.01)])
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    await peer.start("session/prompt", _prompt(session_id, "one"))
    await _until(lambda: bool(peer.text(session_id)))
    await peer.connection.aclose()
    events = await _stored(server, session_id)
    assert [e.data.reason for e in events if e.type == "turn/end"] == ["cancelled"]
    again = Peer(server, "again")
    await again.initialize()
    await again.result(
        "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    )
    assert again.text(session_id, "user_message_chunk") == "one"


async def test_errors_leave_the_connection_serving(server: AcpServer, workspace: Path) -> None:
    peer = Peer(server)
    early = await peer.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    assert early["error"]["code"] == -32013
    assert "initialize" in early["error"]["message"]
    await peer.connection.receive("{not json")
    assert peer.sent[-1]["error"]["code"] == -32700
    assert peer.sent[-1]["id"] is None
    await peer.connection.receive("[1, 2]")
    assert peer.sent[-1]["error"]["code"] == -32600
    await peer.initialize()
    await peer.connection.receive('{"jsonrpc":"2.0","id":99,"method":"session/list","params":[1]}')
    assert peer.sent[-1]["id"] == 99
    assert peer.sent[-1]["error"]["code"] == -32602
    await peer.connection.receive('{"jsonrpc":"2.0","id":{"x":1},"method":"session/list"}')
    assert peer.sent[-1]["error"]["code"] == -32600
    unknown = await peer.request("session/frobnicate", {})
    assert unknown["error"]["code"] == -32601
    assert "session/frobnicate" in unknown["error"]["message"]
    missing = await peer.request("session/new", {"mcpServers": []})
    assert missing["error"]["code"] == -32602
    assert "cwd" in missing["error"]["message"]
    prompt = await peer.request(
        "session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}
    )
    assert prompt["error"]["code"] == -32002
    assert "nope" in prompt["error"]["message"]
    outside = await peer.request("session/new", {"cwd": "/", "mcpServers": []})
    assert outside["error"]["code"] == -32602
    assert "not under the served roots" in outside["error"]["message"]
    relative = await peer.request("session/new", {"cwd": "ws", "mcpServers": []})
    assert "absolute" in relative["error"]["message"]
    trellis_only = await peer.request("_trellis/inject", {})
    assert trellis_only["error"]["code"] == -32601
    session_id = await _new(peer, workspace)
    assert session_id


async def test_an_exception_inside_a_handler_is_an_internal_error_for_that_request_only(
    server: AcpServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    peer = Peer(server)
    session_id = await _new(peer, workspace)

    def broken(*_: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("app.acp.lifecycle.LifecycleHandlers._served_roots", broken)
    failed = await peer.request("session/list", {})
    assert failed["error"]["code"] == -32603
    assert "boom" in failed["error"]["message"]
    monkeypatch.undo()
    assert (await peer.result("session/prompt", _prompt(session_id, "still here")))[
        "stopReason"
    ] == "end_turn"


async def test_set_config_option_switches_the_model(server: AcpServer, workspace: Path) -> None:
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    result = await peer.result(
        "session/set_config_option",
        {"sessionId": session_id, "configId": "model", "value": "scripted"},
    )
    option, mode = result["configOptions"]
    assert mode["id"] == "mode"
    assert option["id"] == "model"
    assert option["currentValue"] == "scripted"
    bad = await peer.request(
        "session/set_config_option", {"sessionId": session_id, "configId": "model", "value": "nope"}
    )
    assert bad["error"]["code"] == -32602
    assert "nope" in bad["error"]["message"]


async def test_slash_commands_run_through_the_engine_registry(
    server: AcpServer, workspace: Path
) -> None:
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    await peer.result("session/prompt", _prompt(session_id, "hello"))
    result = await peer.result("session/prompt", _prompt(session_id, "/pin remember the tests"))
    assert result["stopReason"] == "end_turn"
    answer = (
        "pinned pin1; the model sees it now, and it joins the stable floor at the next planned "
        "break"
    )
    assert peer.text(session_id).count(answer) == 1  # from the log, not said a second time
    assert [p.text for p in server.sessions.get(session_id).agent.pins] == ["remember the tests"]  # type: ignore[union-attr]
    await peer.result("session/prompt", _prompt(session_id, "/context"))  # changes nothing
    assert "last request" in peer.text(session_id)
    assert "the window by category" in peer.text(session_id)  # what fills it, as the console says
    assert "tools: built-in" in peer.text(session_id)
    # loaded, the exchange reads as it did live: the command as the user's words, the answer
    other = Peer(server, "other")
    await other.initialize()
    await other.result(
        "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    )
    assert other.text(session_id, "user_message_chunk") == "hello/pin remember the tests"
    assert other.text(session_id).endswith(answer)


async def test_resource_blocks_become_attachments(
    server: AcpServer, workspace: Path, tmp_path: Path
) -> None:
    """An embedded resource brings its text; a link to a text file of the workspace is read,
    as the console reads an `@path`; a link the agent cannot read (another scheme, outside the
    workspace, a binary file) stays a link, and the model is told so. The offline model's
    default reply echoes what it was given."""
    (tmp_path / "outside.txt").write_text("secret")
    (workspace / "image.bin").write_bytes(b"\x89PNG\x00\x01")
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    prompt = [
        {"type": "text", "text": "look at these"},
        {"type": "resource_link", "name": "hello.txt", "uri": f"file://{workspace}/hello.txt"},
        {
            "type": "resource",
            "resource": {
                "uri": f"file://{workspace}/a.py",
                "text": "print(1)",
                "mimeType": "text/x-python",
            },
        },
        {"type": "resource_link", "name": "outside", "uri": f"file://{tmp_path}/outside.txt"},
        {"type": "resource_link", "name": "image.bin", "uri": f"file://{workspace}/image.bin"},
        {"type": "resource_link", "name": "site", "uri": "https://example.com/x"},
    ]
    await peer.result("session/prompt", {"sessionId": session_id, "prompt": prompt})
    (message,) = [e.data for e in await _stored(server, session_id) if e.type == "user/message"]
    assert message.content == "look at these"
    assert [(a.name, a.text, a.mime_type) for a in message.attachments] == [
        ("hello.txt", "hello there\n", "text/plain"),
        ("a.py", "print(1)", "text/x-python"),
        ("outside", "", ""),
        ("image.bin", "", ""),
        ("site", "", ""),
    ]
    assert message.attachments[0].uri == f"file://{workspace}/hello.txt"  # as the client sent it
    seen = peer.text(session_id)
    assert "hello there" in seen
    assert "secret" not in seen
    assert seen.count(LINK_ONLY) == 3
    image = await peer.request(
        "session/prompt",
        {
            "sessionId": session_id,
            "prompt": [{"type": "image", "data": "", "mimeType": "image/png"}],
        },
    )
    assert image["error"]["code"] == -32602
    assert "prompt.0" in image["error"]["message"]


async def test_engine_events_for_a_client_that_opts_in_and_inject_never_as_user_words(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(text="ok")])
    watcher = Peer(server, "watcher")
    await watcher.initialize({"trellis/events": True})
    session_id = str(
        (await watcher.result("session/new", {"cwd": str(workspace), "mcpServers": []}))[
            "sessionId"
        ]
    )
    assert (
        await watcher.result(
            "_trellis/inject",
            {"sessionId": session_id, "content": "the build is red", "source": "ci:jenkins"},
        )
        == {}
    )
    await watcher.result("session/prompt", _prompt(session_id, "hi"))
    types = [
        m["params"]["event"]["type"] for m in watcher.sent if m.get("method") == "_trellis/event"
    ]
    assert "user/message" in types
    assert "turn/end" in types
    caught = await watcher.result("_trellis/events", {"sessionId": session_id, "fromSeq": 0})
    assert isinstance(caught["nextSeq"], int)

    plain = Peer(server, "plain")
    await plain.initialize()
    await plain.result(
        "session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    )
    everything = json.dumps(plain.sent)
    assert "the build is red" not in everything
    assert plain.text(session_id, "user_message_chunk") == "hi"
    assert not [m for m in plain.sent if m.get("method") == "_trellis/event"]


async def test_a_failed_turn_is_an_error_answer_carrying_its_message(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(error="the endpoint fell over")])
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    failed = await peer.request("session/prompt", _prompt(session_id, "hi"))
    assert failed["error"]["code"] == -32012
    assert "the endpoint fell over" in failed["error"]["message"]
    assert (await peer.result("session/prompt", _prompt(session_id, "again")))[
        "stopReason"
    ] == "end_turn"


async def test_max_steps_is_max_turn_requests(
    tmp_path: Path, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append(
        [Reply(tool_calls=[call("list_files", "l1")]), Reply(tool_calls=[call("list_files", "l2")])]
    )
    config = Config.model_validate({"agent": {"max_steps": 1}})
    made = AcpServer(
        AcpOptions(
            store_path=tmp_path / "other.sqlite",
            roots=[workspace],
            config=config,
            gateway_factory=lambda: ScriptedGateway(replies.pop(0)),
        )
    )
    try:
        peer = Peer(made)
        session_id = await _new(peer, workspace)
        result = await peer.result("session/prompt", _prompt(session_id, "list forever"))
        assert result["stopReason"] == "max_turn_requests"
    finally:
        await made.aclose()


async def test_two_connections_loading_one_session_at_once_share_one_agent(
    server: AcpServer, workspace: Path
) -> None:
    first = Peer(server, "first")
    session_id = await _new(first, workspace)
    await first.result("session/prompt", _prompt(session_id, "hi"))
    await first.connection.aclose()
    peers = [Peer(server, f"p{n}") for n in range(3)]
    for peer in peers:
        await peer.initialize()
    load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    answers = await asyncio.gather(*(peer.request("session/load", load) for peer in peers))
    assert [a["result"].keys() for a in answers] == [{"modes"}] * 3
    session = server.sessions.get(session_id)
    assert session is not None
    assert session.holders == {"p0", "p1", "p2"}
    for peer in peers:
        assert peer.text(session_id, "user_message_chunk") == "hi"
    for peer in peers[:2]:
        await peer.connection.aclose()
    assert server.sessions.get(session_id) is session
    await peers[2].connection.aclose()
    assert server.sessions.get(session_id) is None


async def test_an_engine_event_over_the_limit_goes_out_without_its_data(
    server: AcpServer, workspace: Path
) -> None:
    big = "z" * (2 * 1024 * 1024)
    peer = Peer(server)
    await peer.initialize({"trellis/events": True})
    session_id = str(
        (await peer.result("session/new", {"cwd": str(workspace), "mcpServers": []}))["sessionId"]
    )
    assert await peer.result("_trellis/inject", {"sessionId": session_id, "content": big}) == {}
    await _until(
        lambda: any(
            "omitted" in m["params"]["event"]
            for m in peer.sent
            if m.get("method") == "_trellis/event"
        )
    )
    (stub,) = [
        m["params"]["event"]
        for m in peer.sent
        if m.get("method") == "_trellis/event" and "omitted" in m["params"]["event"]
    ]
    assert stub["type"] == "user/message"
    assert "over the 1 MiB limit" in stub["omitted"]


async def test_loading_again_on_the_same_connection_keeps_its_running_prompt(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(text="tick " * 40, chunk_delay=0.005)])
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    running = await peer.start("session/prompt", _prompt(session_id, "count"))
    await _until(lambda: bool(peer.text(session_id)))
    load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    assert (await peer.request("session/load", load))["result"].keys() == {"modes"}
    assert (await running)["result"]["stopReason"] == "end_turn"


async def test_text_no_utf_8_can_carry_goes_out_json_escaped(server: AcpServer) -> None:
    peer = Peer(server)
    chunk = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "caf\udce9 é"},
    }
    update = {"sessionId": "s1", "update": chunk}
    await peer.connection.deliver(
        [{"jsonrpc": "2.0", "method": "session/update", "params": update}]
    )
    assert peer.sent[-1]["params"]["update"]["content"]["text"] == "caf\udce9 é"
