"""Trellis through the official TypeScript SDK's client, an ACP client of other authors: each
scenario runs over stdio with `trellis acp` as the SDK's agent, and against a `trellis serve` over
WebSocket and over streamable HTTP (the same scenario module, `node_peers/scenario.mjs`, with the
SDK's own stream for each transport). acpx: `test_acpx.py`."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.acp.http_peer import http_url
from tests.acp.node_peers import Place, replies_file, sdk_run, serve_run
from tests.acp.ws_peer import TOKEN, ServeProcess, serving
from tests.processes import POLL, POLLS, alive

INIT = {
    "method": "initialize",
    "params": {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
    },
}


class Sdk(Protocol):
    """The TypeScript SDK's client against a Trellis whose offline model says `replies`; each
    `run` is another connection (over stdio: another `trellis acp`)."""

    @property
    def workspace(self) -> Path: ...

    def run(
        self, steps: Sequence[dict[str, Any]], *, permission: str = "allow_once"
    ) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class StdioSdk:
    place: Place
    agent_args: Sequence[str]

    @property
    def workspace(self) -> Path:
        return self.place.workspace

    def run(
        self, steps: Sequence[dict[str, Any]], *, permission: str = "allow_once"
    ) -> list[dict[str, Any]]:
        return sdk_run(self.place, steps, agent_args=self.agent_args, permission=permission)


@dataclass(frozen=True, slots=True)
class ServeSdk:
    """Against `trellis serve`: by WebSocket, or by streamable HTTP if `http`."""

    server: ServeProcess
    http: bool

    @property
    def workspace(self) -> Path:
        return self.server.root

    def run(
        self,
        steps: Sequence[dict[str, Any]],
        *,
        permission: str = "allow_once",
        sdk_errors: bool = False,
    ) -> list[dict[str, Any]]:
        url = http_url(self.server) if self.http else self.server.url
        folder = self.server.home.parent
        return serve_run(url, TOKEN, folder, steps, permission=permission, sdk_errors=sdk_errors)


OpenSdk = Callable[[list[dict[str, Any]]], Sdk]


@pytest.fixture(params=["stdio", "websocket", "http"])
def open_sdk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenSdk]:
    """`sdk(replies)`: the SDK's client over this test's transport, its model saying `replies`."""
    with ExitStack() as stack:

        def opened(replies: list[dict[str, Any]]) -> Sdk:
            if request.param == "stdio":
                place = Place.under(tmp_path)
                return StdioSdk(place, place.script(replies))
            path = replies_file(tmp_path / "model", replies)
            config = f'default_model = "s"\n[models.s]\nprovider = "scripted"\nscript = "{path}"\n'
            server = stack.enter_context(serving(tmp_path, config=config))
            return ServeSdk(server, http=request.param == "http")

        yield opened


def updates(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        line["params"]["update"]
        for line in lines
        if line["kind"] == "notification"
        and line["method"] == "session/update"
        and line["params"]["update"]["sessionUpdate"] == kind
    ]


def response(lines: list[dict[str, Any]], method: str) -> dict[str, Any]:
    (found,) = [
        line for line in lines if line.get("method") == method and line["kind"] != "notification"
    ]
    assert found["kind"] == "response", found
    result: dict[str, Any] = found["result"]
    return result


def test_the_typescript_sdk_runs_a_turn_that_writes_a_file_and_loads_it_back(
    open_sdk: OpenSdk,
) -> None:
    sdk = open_sdk(
        [
            {
                "text": "Writing it.",
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "new.txt", "content": "hello\n"}}
                ],
            },
            {"text": "Done."},
        ]
    )
    cwd = str(sdk.workspace)
    lines = sdk.run(
        [
            INIT,
            {
                "method": "session/new",
                "params": {"cwd": cwd, "mcpServers": []},
                "save": {"sid": "sessionId"},
            },
            {
                "method": "session/prompt",
                "params": {"sessionId": "$sid", "prompt": [{"type": "text", "text": "write it"}]},
            },
        ]
    )
    assert response(lines, "session/prompt")["stopReason"] == "end_turn"
    assert (sdk.workspace / "new.txt").read_text(encoding="utf-8") == "hello\n"
    (asked,) = [line for line in lines if line["kind"] == "request"]
    assert asked["method"] == "session/request_permission"
    (call,) = updates(lines, "tool_call")
    assert call["kind"] == "edit"
    done = [u for u in updates(lines, "tool_call_update") if u.get("status") == "completed"]
    assert [u["toolCallId"] for u in done] == [call["toolCallId"]]
    text = "".join(u["content"]["text"] for u in updates(lines, "agent_message_chunk"))
    assert text == "Writing it.Done."
    session_id = response(lines, "session/new")["sessionId"]

    # another client process loads the stored session: the SDK reads the replay as it arrives
    loaded = sdk.run(
        [
            INIT,
            {
                "method": "session/load",
                "params": {"sessionId": session_id, "cwd": cwd, "mcpServers": []},
            },
        ]
    )
    response(loaded, "session/load")
    (said,) = updates(loaded, "user_message_chunk")
    assert said["content"]["text"] == "write it"
    assert [u["toolCallId"] for u in updates(loaded, "tool_call")] == [call["toolCallId"]]
    replayed = "".join(u["content"]["text"] for u in updates(loaded, "agent_message_chunk"))
    assert replayed == "Writing it.Done."


def test_the_typescript_sdk_gets_an_error_for_an_unknown_session(open_sdk: OpenSdk) -> None:
    """-32002 with details; the connection goes on. Over streamable HTTP the session's stream,
    which the SDK opens before it sends the load, is refused 404 as the RFD says, and to the SDK
    a 404 is the connection's end: it says so with the server's reason (README, "Streamable
    HTTP")."""
    sdk = open_sdk([])
    if isinstance(sdk, ServeSdk) and sdk.http:
        load = {
            "method": "session/load",
            "params": {"sessionId": "f" * 32, "cwd": str(sdk.workspace), "mcpServers": []},
        }
        lines = sdk.run([INIT, load], sdk_errors=True)
        (ended,) = [line for line in lines if line["kind"] == "sdk"]
        assert f"404 : no session {'f' * 32} on this server" in ended["error"]
        return
    lines = sdk.run(
        [
            INIT,
            {
                "method": "session/load",
                "params": {"sessionId": "f" * 32, "cwd": str(sdk.workspace), "mcpServers": []},
            },
            {"method": "session/new", "params": {"cwd": str(sdk.workspace), "mcpServers": []}},
        ]
    )
    assert response(lines, "session/new")["sessionId"]
    (failed,) = [line for line in lines if line["kind"] == "error"]
    assert failed["error"]["code"] == -32002
    assert "no session with id" in failed["error"]["message"]
    assert "no session with id" in failed["error"]["data"]["details"]


def test_the_typescript_sdk_sets_a_mode_and_a_load_keeps_it(open_sdk: OpenSdk) -> None:
    """The SDK parses the `modes` of each answer and every `current_mode_update`: read-only set
    by `session/set_mode` refuses a write without asking, and another process's load answers
    that mode and replays the change."""
    sdk = open_sdk(
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "new.txt", "content": "x\n"}}
                ]
            },
            {"text": "Refused."},
        ]
    )
    cwd = str(sdk.workspace)
    lines = sdk.run(
        [
            INIT,
            {
                "method": "session/new",
                "params": {"cwd": cwd, "mcpServers": []},
                "save": {"sid": "sessionId"},
            },
            {"method": "session/set_mode", "params": {"sessionId": "$sid", "modeId": "read-only"}},
            {
                "method": "session/prompt",
                "params": {"sessionId": "$sid", "prompt": [{"type": "text", "text": "write"}]},
            },
        ]
    )
    new = response(lines, "session/new")
    assert new["modes"]["currentModeId"] == "ask"
    assert [o["id"] for o in new["configOptions"]] == ["model", "mode"]
    assert response(lines, "session/prompt")["stopReason"] == "end_turn"
    assert not [line for line in lines if line["kind"] == "request"]  # nobody was asked
    assert not (sdk.workspace / "new.txt").exists()
    modes = [u["currentModeId"] for u in updates(lines, "current_mode_update")]
    assert modes[-1] == "read-only"

    loaded = sdk.run(
        [
            INIT,
            {
                "method": "session/load",
                "params": {"sessionId": new["sessionId"], "cwd": cwd, "mcpServers": []},
            },
        ]
    )
    assert response(loaded, "session/load")["modes"]["currentModeId"] == "read-only"
    assert "read-only" in [u["currentModeId"] for u in updates(loaded, "current_mode_update")]


def completed_diffs(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The diffs kept beside each completed tool call, in order."""
    done = [u for u in updates(lines, "tool_call_update") if u.get("status") == "completed"]
    return [c for u in done for c in u.get("content") or [] if c["type"] == "diff"]


def test_the_typescript_sdk_reads_plans_diffs_and_error_details_and_a_load_replays_them(
    open_sdk: OpenSdk,
) -> None:
    """The SDK parses every plan and diff it gets; a new file's diff has `oldText: null`, an
    edit's the old text, each kept beside its completed call; a failed request's error carries
    `data.details`. Another connection's load replays the plans and diffs and answers the mode."""
    sdk = open_sdk(
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "plan.txt", "content": "one\n"}}
                ]
            },
            {"text": "Written."},
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {"path": "plan.txt", "old": "one", "new": "two"},
                    }
                ]
            },
            {"text": "Edited."},
        ]
    )
    cwd = str(sdk.workspace)

    def prompt(text: str) -> dict[str, Any]:
        return {
            "method": "session/prompt",
            "params": {"sessionId": "$sid", "prompt": [{"type": "text", "text": text}]},
        }

    lines = sdk.run(
        [
            INIT,
            {
                "method": "session/new",
                "params": {"cwd": cwd, "mcpServers": []},
                "save": {"sid": "sessionId"},
            },
            prompt("/plan add buy bread"),
            prompt("/plan add pay"),
            prompt("/plan check 1"),
            prompt("write plan.txt"),
            prompt("edit plan.txt"),
            {"method": "session/prompt", "params": {"sessionId": "$sid"}},
            {"method": "session/set_mode", "params": {"sessionId": "$sid", "modeId": "read-only"}},
        ]
    )
    plans = [[(e["content"], e["status"]) for e in u["entries"]] for u in updates(lines, "plan")]
    assert plans[-1] == [("buy bread", "completed"), ("pay", "pending")]
    assert all(e["priority"] == "medium" for u in updates(lines, "plan") for e in u["entries"])
    path = str(sdk.workspace / "plan.txt")
    diffs = [
        {"type": "diff", "path": path, "oldText": None, "newText": "one\n"},
        {"type": "diff", "path": path, "oldText": "one\n", "newText": "two\n"},
    ]
    assert completed_diffs(lines) == diffs
    assert (sdk.workspace / "plan.txt").read_text(encoding="utf-8") == "two\n"
    (failed,) = [line for line in lines if line["kind"] == "error"]
    assert failed["error"]["code"] == -32602
    assert "prompt" in failed["error"]["data"]["details"]
    session_id = response(lines, "session/new")["sessionId"]

    loaded = sdk.run(
        [
            INIT,
            {
                "method": "session/load",
                "params": {"sessionId": session_id, "cwd": cwd, "mcpServers": []},
            },
        ]
    )
    assert response(loaded, "session/load")["modes"]["currentModeId"] == "read-only"
    replayed = [
        [(e["content"], e["status"]) for e in u["entries"]] for u in updates(loaded, "plan")
    ]
    assert replayed[-1] == plans[-1]
    assert completed_diffs(loaded) == diffs


def test_the_typescript_sdk_cancels_requests_in_flight(open_sdk: OpenSdk, tmp_path: Path) -> None:
    """The SDK's own cancellation (a request's `cancellationSignal`, aborted) sends
    `$/cancel_request`: a `session/new` held by an MCP server that never answers is answered
    -32800 (and the server it started is stopped), and a streaming prompt ends with stop reason `cancelled`; the connection goes on."""
    sdk = open_sdk([{"text": "word " * 500, "chunk_delay": 0.01}])
    started = tmp_path / "mcp-started"
    silent = (
        "import os, pathlib, sys; "
        f"pathlib.Path({str(started)!r}).write_text(str(os.getpid())); sys.stdin.read()"
    )
    server = {"name": "silent", "command": sys.executable, "args": ["-c", silent], "env": []}
    cwd = str(sdk.workspace)
    lines = sdk.run(
        [
            INIT,
            {
                "method": "session/new",
                "params": {"cwd": cwd, "mcpServers": [server]},
                "background": "held",
            },
            {"exists": str(started)},
            {"cancel": "held"},
            {"await": "held"},
            {
                "method": "session/new",
                "params": {"cwd": cwd, "mcpServers": []},
                "save": {"sid": "sessionId"},
            },
            {
                "method": "session/prompt",
                "params": {"sessionId": "$sid", "prompt": [{"type": "text", "text": "talk"}]},
                "background": "talk",
            },
            {"streaming": "$sid"},
            {"cancel": "talk"},
            {"await": "talk"},
        ]
    )
    (held,) = [line for line in lines if line["kind"] == "error"]
    assert held["method"] == "session/new"
    assert held["error"]["code"] == -32800
    assert held["error"]["data"]["details"]
    assert response(lines, "session/prompt")["stopReason"] == "cancelled"
    said = "".join(u["content"]["text"] for u in updates(lines, "agent_message_chunk"))
    assert 0 < len(said) < len("word " * 500)
    # the withdrawn session/new stopped the MCP server it started (trellis serve still runs)
    silent_pid = int(started.read_text())
    for _ in range(POLLS):
        if not alive(silent_pid):
            break
        time.sleep(POLL)
    assert not alive(silent_pid)
