"""A client that advertises `fs` and `terminal` lends them to the tools (`app.acp.client_tools`):
`trellis acp` as a real process, driven by the `acp` package's client side with an editor that
holds unsaved buffers and runs commands in terminals of its own."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.exceptions import RequestError
from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from engine.events import ToolResultRecord, TurnEnd
from tests.acp.stdio_peer import Recorder, StdioPeer, open_session, trellis_acp
from tests.acp.test_stdio import _stored
from tests.waiting import until

DISK = "remember the milk\n"
BUFFER = "remember the eggs (unsaved)\n"
LENT = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


@dataclass
class Terminal:
    """A command in the editor's terminal: its output, and its exit (None: it runs until
    killed)."""

    command: str
    args: list[str]
    cwd: str | None
    output: str
    exit_code: int | None
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    signal: str | None = None

    def status(self) -> TerminalExitStatus | None:
        if not self.exited.is_set():
            return None
        return TerminalExitStatus(exit_code=self.exit_code, signal=self.signal)


@dataclass
class Editor(Recorder):
    """A client with unsaved buffers (by absolute path) and terminals whose commands it answers
    from `commands` (shell text -> output and exit code; None: it runs until killed)."""

    buffers: dict[str, str] = field(default_factory=dict)
    writes: list[tuple[str, str]] = field(default_factory=list)
    read_error: RequestError | None = None
    commands: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    terminals: dict[str, Terminal] = field(default_factory=dict)
    terminal_calls: list[tuple[str, str]] = field(default_factory=list)

    async def read_text_file(self, **params: Any) -> ReadTextFileResponse:
        if self.read_error is not None:
            raise self.read_error
        path = params["path"]
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, **params: Any) -> WriteTextFileResponse:
        self.writes.append((params["path"], params["content"]))
        self.buffers[params["path"]] = params["content"]
        return WriteTextFileResponse()

    async def create_terminal(self, **params: Any) -> CreateTerminalResponse:
        ident = f"term-{len(self.terminals) + 1}"
        args = params["args"] or []
        output, code = self.commands[args[-1]]
        terminal = Terminal(params["command"], args, params["cwd"], output, code)
        if code is not None:
            terminal.exited.set()
        self.terminals[ident] = terminal
        self.terminal_calls.append(("create", ident))
        return CreateTerminalResponse(terminal_id=ident)

    async def terminal_output(self, **params: Any) -> TerminalOutputResponse:
        terminal = self.terminals[params["terminal_id"]]
        self.terminal_calls.append(("output", params["terminal_id"]))
        return TerminalOutputResponse(
            output=terminal.output, truncated=False, exit_status=terminal.status()
        )

    async def wait_for_terminal_exit(self, **params: Any) -> WaitForTerminalExitResponse:
        terminal = self.terminals[params["terminal_id"]]
        await terminal.exited.wait()
        return WaitForTerminalExitResponse(exit_code=terminal.exit_code, signal=terminal.signal)

    async def kill_terminal(self, **params: Any) -> KillTerminalResponse:
        terminal = self.terminals[params["terminal_id"]]
        self.terminal_calls.append(("kill", params["terminal_id"]))
        if not terminal.exited.is_set():
            terminal.signal = "SIGKILL"
            terminal.exited.set()
        return KillTerminalResponse()

    async def release_terminal(self, **params: Any) -> ReleaseTerminalResponse:
        self.terminal_calls.append(("release", params["terminal_id"]))
        return ReleaseTerminalResponse()


@pytest.fixture
def workspace(workspace: Path) -> Path:
    """The workspace with the file on disk the editor's copy differs from."""
    (workspace / "notes.txt").write_text(DISK)
    return workspace


def script(tmp_path: Path, *calls: tuple[str, dict[str, Any]]) -> list[str]:
    """A reply per tool call, then "done"."""
    replies: list[dict[str, Any]] = [
        {"tool_calls": [{"name": name, "id": f"c{n}", "arguments": arguments}]}
        for n, (name, arguments) in enumerate(calls, start=1)
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": [*replies, {"text": "done"}]}))
    return ["--script", str(path)]


async def _prompt(peer: StdioPeer, session_id: str) -> str:
    response = await peer.conn.prompt(session_id=session_id, prompt=[text_block("go")])
    return response.stop_reason


def _results(events: list[Any]) -> list[tuple[str, bool]]:
    return [
        (e.data.content, e.data.is_error) for e in events if isinstance(e.data, ToolResultRecord)
    ]


def _index(peer: StdioPeer, matches: Any) -> int:
    return next(i for i, message in enumerate(peer.received) if matches(message))


def _update_of(message: dict[str, Any], call_id: str) -> bool:
    if message.get("method") != "session/update":
        return False
    return bool(message["params"]["update"].get("toolCallId") == call_id)


def _requests(peer: StdioPeer, prefix: str) -> list[dict[str, Any]]:
    return [m for m in peer.received if str(m.get("method", "")).startswith(prefix)]


async def test_read_file_returns_the_unsaved_buffer_and_write_goes_to_the_client(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script(
        tmp_path,
        ("read_file", {"path": "notes.txt"}),
        ("write_file", {"path": "out.txt", "content": "written\n"}),
        ("edit_file", {"path": "notes.txt", "old": "eggs", "new": "bread"}),
        ("write_file", {"path": ".trellis/config.toml", "content": "[serve]\n"}),
    )
    editor = Editor(buffers={str(workspace / "notes.txt"): BUFFER})
    async with trellis_acp(
        home=home, config=config, cwd=workspace, args=args, client=editor
    ) as peer:
        session_id = await open_session(peer, workspace, LENT)
        assert await _prompt(peer, session_id) == "end_turn"
        shown = [u for u in peer.updates(session_id) if u.get("toolCallId") == "c1"][-1]
        assert shown["content"][0]["content"]["text"] == BUFFER
        # the client has each tool call before the request made for it
        for call, method in (("c1", "fs/read_text_file"), ("c2", "fs/write_text_file")):
            assert _index(peer, lambda m, c=call: _update_of(m, c)) < _index(
                peer, lambda m, method=method: m.get("method") == method
            )
    assert editor.writes == [
        (str(workspace / "out.txt"), "written\n"),
        (str(workspace / "notes.txt"), "remember the bread (unsaved)\n"),
    ]
    assert not (workspace / "out.txt").exists()
    assert (workspace / "notes.txt").read_text() == DISK
    assert not (workspace / ".trellis").exists()
    results = _results(await _stored(home, session_id))
    assert results[:3] == [
        (BUFFER, False),
        ("created out.txt (8 characters, 1 line)", False),
        ("edited notes.txt: replaced 1 occurrence at line 1", False),
    ]
    refused, is_error = results[3]
    assert is_error
    assert refused.startswith("refused: '.trellis/config.toml' is inside .trellis/")


async def test_a_client_error_in_fs_read_is_a_tool_error(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script(tmp_path, ("read_file", {"path": "notes.txt"}), ("read_file", {"path": "x"}))
    editor = Editor(read_error=RequestError(-32603, "the buffer is being reloaded"))
    async with trellis_acp(
        home=home, config=config, cwd=workspace, args=args, client=editor
    ) as peer:
        session_id = await open_session(peer, workspace, LENT)
        assert await _prompt(peer, session_id) == "end_turn"
        assert peer.text(session_id) == "done"
    results = _results(await _stored(home, session_id))
    assert results[0] == (
        "cannot read 'notes.txt': the client answered fs/read_text_file with error -32603: "
        "the buffer is being reloaded",
        True,
    )


async def test_run_shell_runs_in_the_clients_terminal(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script(tmp_path, ("run_shell", {"command": "make test"}))
    editor = Editor(commands={"make test": ("3 passed\n", 0)})
    async with trellis_acp(
        home=home, config=config, cwd=workspace, args=args, client=editor
    ) as peer:
        session_id = await open_session(peer, workspace, LENT)
        assert await _prompt(peer, session_id) == "end_turn"
        (created,) = _requests(peer, "terminal/create")
        # the call shows the client's terminal while it runs and keeps it beside the result
        updates = [u for u in peer.updates(session_id) if u.get("toolCallId") == "c1"]
        embed = {"type": "terminal", "terminalId": "term-1"}
        shown = next(i for i, u in enumerate(updates) if u.get("content") == [embed])
        assert updates[0]["sessionUpdate"] == "tool_call"
        assert 0 < shown < len(updates) - 1
        assert updates[-1]["status"] == "completed"
        assert updates[-1]["content"][0] == embed
        assert updates[-1]["content"][1]["content"]["text"] == "3 passed\n\n[exit code 0]"
    (terminal,) = editor.terminals.values()
    assert (terminal.command, terminal.args, terminal.cwd) == (
        "/bin/sh",
        ["-c", "make test"],
        str(workspace),
    )
    assert created["params"]["outputByteLimit"] > 0
    assert [call for call, _ in editor.terminal_calls] == ["create", "output", "release"]
    assert _results(await _stored(home, session_id)) == [("3 passed\n\n[exit code 0]", False)]


async def test_cancel_mid_terminal_kills_and_releases_it(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script(tmp_path, ("run_shell", {"command": "serve forever"}))
    editor = Editor(commands={"serve forever": ("listening\n", None)})
    async with trellis_acp(
        home=home, config=config, cwd=workspace, args=args, client=editor
    ) as peer:
        session_id = await open_session(peer, workspace, LENT)
        running = asyncio.create_task(_prompt(peer, session_id))
        # the running command shows in the client's own terminal, embedded in the call
        await until(
            lambda: any(
                u.get("toolCallId") == "c1" and "term-1" in json.dumps(u.get("content"))
                for u in peer.updates(session_id)
            ),
            "the tool call shows the terminal",
        )
        await peer.conn.cancel(session_id=session_id)
        assert await running == "cancelled"
        await until(lambda: ("release", "term-1") in editor.terminal_calls, "the terminal released")
    calls = [call for call, _ in editor.terminal_calls]
    assert calls[0] == "create"
    assert calls[-2:] == ["kill", "release"]
    events = await _stored(home, session_id)
    assert [e.data.reason for e in events if isinstance(e.data, TurnEnd)] == ["cancelled"]


async def test_a_timed_out_command_is_killed_in_the_terminal(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script(tmp_path, ("run_shell", {"command": "hang", "timeout": 0.2}))
    editor = Editor(commands={"hang": ("partial\n", None)})
    async with trellis_acp(
        home=home, config=config, cwd=workspace, args=args, client=editor
    ) as peer:
        session_id = await open_session(peer, workspace, LENT)
        assert await _prompt(peer, session_id) == "end_turn"
    assert [call for call, _ in editor.terminal_calls] == ["create", "kill", "output", "release"]
    ((content, is_error),) = _results(await _stored(home, session_id))
    assert is_error
    assert content.startswith("partial\n\n[killed: timed out after 0.2 s;")


async def test_a_client_without_the_capabilities_gets_the_local_tools_and_the_same_log(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    """The same script, once through an editor's buffer and terminal, once on the local disk
    holding the same text: the stored logs are the same event for event, so replay is too, but
    for the checkpoints' records, which are of the disk."""
    calls = (
        ("read_file", {"path": "notes.txt"}),
        ("write_file", {"path": "out.txt", "content": "written\n"}),
        ("run_shell", {"command": "echo hi"}),
    )
    args = script(tmp_path, *calls)
    logs: list[list[tuple[str, Any]]] = []
    for capabilities in (LENT, ClientCapabilities()):
        editor = Editor(
            buffers={str(workspace / "notes.txt"): DISK}, commands={"echo hi": ("hi\n", 0)}
        )
        async with trellis_acp(
            home=home, config=config, cwd=workspace, args=args, client=editor
        ) as peer:
            session_id = await open_session(peer, workspace, capabilities)
            assert await _prompt(peer, session_id) == "end_turn"
            lent = capabilities is LENT
            assert bool(_requests(peer, "fs/")) is lent
            assert bool(_requests(peer, "terminal/")) is lent
        assert (workspace / "out.txt").exists() is not lent
        logs.append([(e.type, e.data) for e in await _stored(home, session_id)])
    through_editor, local = logs
    # the checkpoints are of the disk, which the editor's write did not reach: their records
    # differ (ids, and out.txt only where it was written locally); the rest is the same
    assert _without_checkpoints(through_editor) == _without_checkpoints(local)
    assert _turn_files(local) == {"out.txt"}
    assert _turn_files(through_editor) == set()
    results = [(data.content, data.is_error) for kind, data in local if kind == "tool/result"]
    assert results == [
        (DISK, False),
        ("created out.txt (8 characters, 1 line)", False),
        ("hi\n\n[exit code 0]", False),
    ]


CHECKPOINT_RECORDS = ("tool/changes", "turn/changes")


def _without_checkpoints(log: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [(kind, data) for kind, data in log if kind not in CHECKPOINT_RECORDS]


def _turn_files(log: list[tuple[str, Any]]) -> set[str]:
    return {f.path for kind, data in log if kind == "turn/changes" for f in data.files}
