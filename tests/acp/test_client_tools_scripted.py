"""`app.acp.client_tools` against a scripted peer, without a process: what a client's capabilities
lend, live output while a command runs, a terminal kept within the output limit, terminals
released whatever happens (cancelled, slow to be created, a failed kill), answers that do not fit
the schema; and, through the core, a request for a tool call sent after that call's update."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError
from acp.schema import ClientCapabilities, FileSystemCapabilities

from app.acp.client_tools import ClientFiles, ClientTerminal, lent_by
from app.acp.core import AcpOptions, AcpServer
from engine.config import Config
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.tools.front_end import LOCAL, CommandRun, FrontEndError
from tests.acp.peer import Peer

Answer = Callable[[dict[str, Any]], Awaitable[Any]]


async def nothing(_: dict[str, Any]) -> Any:
    return {}


@dataclass
class ScriptedPeer:
    """Answers each method with its script; records every request in order."""

    client_capabilities: ClientCapabilities | None = None
    answers: dict[str, Answer] = field(default_factory=dict)
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    shown: list[tuple[str, str]] = field(default_factory=list)
    """The (call id, terminal id) of each terminal shown with its call."""

    async def show_terminal(self, session_id: str, call_id: str, terminal_id: str) -> None:
        self.shown.append((call_id, terminal_id))

    async def request(self, method: str, params: Any, *, session_id: str | None = None) -> Any:
        assert session_id == params["sessionId"]
        self.sent.append((method, params))
        return await self.answers.get(method, nothing)(params)

    def methods(self) -> list[str]:
        return [method for method, _ in self.sent]


def test_only_what_the_capabilities_offer_is_lent() -> None:
    assert lent_by(None, "s") is LOCAL
    assert lent_by(ScriptedPeer(), "s") is LOCAL
    reading = ScriptedPeer(ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)))
    lent = lent_by(reading, "s")
    assert isinstance(lent.reader, ClientFiles)
    assert (lent.writer, lent.terminal) == (None, None)
    terminal = lent_by(ScriptedPeer(ClientCapabilities(terminal=True)), "s")
    assert isinstance(terminal.terminal, ClientTerminal)
    assert (terminal.reader, terminal.writer) == (None, None)


async def _created(_: dict[str, Any]) -> Any:
    return {"terminalId": "t1"}


def terminal_peer(output: Answer, wait: Answer) -> ScriptedPeer:
    """A client whose one terminal answers `terminal/output` and `terminal/wait_for_exit`."""
    return ScriptedPeer(
        answers={
            "terminal/create": _created,
            "terminal/output": output,
            "terminal/wait_for_exit": wait,
        }
    )


def run(**overrides: Any) -> CommandRun:
    given: dict[str, Any] = {
        "command": "make",
        "cwd": Path("/ws"),
        "timeout": 60.0,
        "output_limit": 100,
    }
    return CommandRun(**(given | overrides))


async def test_output_is_passed_on_in_lines_while_the_command_runs() -> None:
    exited = asyncio.Event()
    outputs = iter(["one\ntw", "one\ntwo\nthr", "one\ntwo\nthree"])
    seen: list[str] = []

    async def output(_: dict[str, Any]) -> Any:
        text = next(outputs)
        if text.endswith("three"):
            return {"output": text, "truncated": False, "exitStatus": {"exitCode": 0}}
        if text.endswith("thr"):
            exited.set()
        return {"output": text, "truncated": False}

    async def wait(_: dict[str, Any]) -> Any:
        await exited.wait()
        return {"exitCode": 0}

    peer = terminal_peer(output, wait)
    outcome = await ClientTerminal(peer, "s").run(run(on_output=seen.append))
    assert seen == ["one\n", "two\n", "three"]
    assert (outcome.output, outcome.exit_code) == ("one\ntwo\nthree", 0)
    assert peer.methods()[-1] == "terminal/release"


async def test_output_the_client_cut_is_marked_and_kept_within_the_limit() -> None:
    async def output(_: dict[str, Any]) -> Any:
        return {"output": "x" * 150, "truncated": False, "exitStatus": {"exitCode": 1}}

    async def wait(_: dict[str, Any]) -> Any:
        return {"exitCode": 1}

    peer = terminal_peer(output, wait)
    outcome = await ClientTerminal(peer, "s").run(run())
    marker, kept = outcome.output.split("\n")
    assert marker == "[output truncated: the terminal kept only its last 100 characters]"
    assert kept == "x" * 100
    assert peer.sent[0][1]["outputByteLimit"] == 100


async def test_a_terminal_created_after_its_call_was_cancelled_is_killed_and_released() -> None:
    creating: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    asked, released = asyncio.Event(), asyncio.Event()

    async def create(_: dict[str, Any]) -> Any:
        asked.set()
        return await creating

    async def release(_: dict[str, Any]) -> Any:
        released.set()
        return {}

    peer = ScriptedPeer(answers={"terminal/create": create, "terminal/release": release})
    call = asyncio.create_task(ClientTerminal(peer, "s").run(run()))
    await asked.wait()
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    assert call.cancelled()
    creating.set_result({"terminalId": "late"})
    async with asyncio.timeout(60):  # a bound, so that a regression fails instead of hanging
        await released.wait()
    assert peer.methods() == ["terminal/create", "terminal/kill", "terminal/release"]
    assert [params["terminalId"] for _, params in peer.sent[1:]] == ["late", "late"]


async def test_a_client_slow_to_create_fails_the_call_and_its_late_terminal_is_released() -> None:
    creating: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    released = asyncio.Event()

    async def create(_: dict[str, Any]) -> Any:
        return await creating

    async def release(_: dict[str, Any]) -> Any:
        released.set()
        return {}

    peer = ScriptedPeer(answers={"terminal/create": create, "terminal/release": release})
    with pytest.raises(FrontEndError, match=r"did not answer terminal/create within 0\.05 s"):
        await ClientTerminal(peer, "s").run(run(timeout=0.05))
    creating.set_result({"terminalId": "late"})
    async with asyncio.timeout(60):  # a bound, so that a regression fails instead of hanging
        await released.wait()
    assert peer.methods() == ["terminal/create", "terminal/kill", "terminal/release"]


async def test_a_terminal_is_released_even_when_the_kill_fails() -> None:
    async def wait(_: dict[str, Any]) -> Any:
        raise RequestError(-32603, "the terminal crashed")

    async def kill(_: dict[str, Any]) -> Any:
        raise RequestError(-32603, "no such process")

    peer = terminal_peer(nothing, wait)
    peer.answers["terminal/kill"] = kill
    with pytest.raises(FrontEndError, match="terminal/wait_for_exit with error -32603"):
        await ClientTerminal(peer, "s").run(run())
    assert peer.methods() == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    ]


async def test_an_answer_that_does_not_fit_the_schema_is_a_front_end_error() -> None:
    peer = ScriptedPeer(answers={"fs/read_text_file": nothing})
    with pytest.raises(FrontEndError) as raised:
        await ClientFiles(peer, "s").read_text(Path("/ws/a.txt"))
    assert str(raised.value) == (
        "the client's answer to fs/read_text_file does not fit its schema "
        "(Invalid params: content: Field required)"
    )
    assert peer.sent == [("fs/read_text_file", {"sessionId": "s", "path": "/ws/a.txt"})]


class SlowEditor(Peer):
    """An in-process client that takes its time over each update and serves one buffer: a feed
    that lags behind the turn, as a busy editor's would."""

    buffer = "the buffer's text\n"

    async def _receive(self, text: str) -> None:
        message = json.loads(text)
        if message.get("method") == "session/update":
            await asyncio.sleep(0.002)
        await super()._receive(text)
        if message.get("method") == "fs/read_text_file":
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": self.buffer}}
            asyncio.get_running_loop().create_task(self.send(answer))


async def test_a_request_for_a_tool_call_follows_that_calls_update(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    streamed = Reply(
        text="reading " * 200,
        tool_calls=[ToolCall("r1", "read_file", {"path": "notes.txt"})],
        chunk_delay=0,
    )
    server = AcpServer(
        AcpOptions(
            store_path=tmp_path / "sessions.sqlite",
            roots=[workspace],
            config=Config(),
            gateway_factory=lambda: ScriptedGateway([streamed, Reply(text="done")]),
        )
    )
    try:
        peer = SlowEditor(server)
        lent = {"fs": {"readTextFile": True}}
        await peer.result("initialize", {"protocolVersion": 1, "clientCapabilities": lent})
        new = await peer.result("session/new", {"cwd": str(workspace), "mcpServers": []})
        prompt = [{"type": "text", "text": "read"}]
        answer = await peer.result(
            "session/prompt", {"sessionId": new["sessionId"], "prompt": prompt}
        )
        assert answer["stopReason"] == "end_turn"
    finally:
        await server.aclose()
    asked = next(i for i, m in enumerate(peer.sent) if m.get("method") == "fs/read_text_file")
    shown = next(
        i
        for i, m in enumerate(peer.sent)
        if m.get("method") == "session/update" and m["params"]["update"].get("toolCallId") == "r1"
    )
    assert shown < asked
