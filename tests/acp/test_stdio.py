"""`trellis acp` as a real process, driven by the `acp` package's client side (`stdio_peer`)."""

from __future__ import annotations

import asyncio
import json
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.exceptions import RequestError
from acp.schema import (
    AcpMcpServer,
    HttpMcpServer,
    McpServerStdio,
    PermissionOption,
    PromptResponse,
    SseMcpServer,
    ToolCallUpdate,
)

from engine.store.sqlite.store import SQLiteStore
from replay.acp import replay_updates
from tests.acp.stdio_peer import (
    LONG_REPLY,
    StdioPeer,
    acp_argv,
    open_session,
    script_args,
    streaming_prompt,
    trellis_acp,
)
from tests.agent.harness import trellis_env
from tests.tools.test_mcp import FIXTURE
from tests.waiting import until


@pytest.fixture
def workspace(workspace: Path) -> Path:
    """The workspace with a file to read."""
    (workspace / "notes.txt").write_text("remember the milk\n")
    return workspace


async def _stored(home: Path, session_id: str) -> list[Any]:
    async with SQLiteStore(home / "sessions.sqlite") as store:
        return list((await store.inspect(session_id)).events)


async def test_initialize_new_and_a_streamed_prompt(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script_args(tmp_path, {"text": "one two three four five six", "chunk_delay": 0.001})
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        init = await peer.conn.initialize(protocol_version=1)
        assert init.protocol_version == 1
        assert init.agent_capabilities is not None
        assert init.agent_capabilities.load_session is True
        session_id = (await peer.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        response = await peer.conn.prompt(session_id=session_id, prompt=[text_block("count")])
        assert response.stop_reason == "end_turn"
        chunks = [
            u for u in peer.updates(session_id) if u["sessionUpdate"] == "agent_message_chunk"
        ]
        assert len(chunks) > 1
        assert peer.text(session_id) == "one two three four five six"
        kinds = [u["sessionUpdate"] for u in peer.updates(session_id)]
        assert "available_commands_update" in kinds
        assert "usage_update" in kinds


@pytest.mark.parametrize(
    ("choice", "status"), [("allow_once", "completed"), ("reject_once", "failed")]
)
async def test_a_tool_call_with_a_permission_round_trip(
    tmp_path: Path, home: Path, config: Path, workspace: Path, choice: str, status: str
) -> None:
    args = script_args(
        tmp_path,
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "id": "w1",
                    "arguments": {"path": "out.txt", "content": "hi"},
                }
            ]
        },
        {"text": "done"},
    )

    async def answer(_: ToolCallUpdate, options: list[PermissionOption]) -> str:
        assert choice in {o.option_id for o in options}
        return choice

    async with trellis_acp(
        home=home, config=config, cwd=workspace, args=args, permission=answer
    ) as peer:
        session_id = await open_session(peer, workspace)
        response = await peer.conn.prompt(session_id=session_id, prompt=[text_block("write")])
        assert response.stop_reason == "end_turn"
        (asked,) = peer.client.asked
        assert asked.tool_call_id == "w1"
        assert asked.kind == "edit"
        calls = [u for u in peer.updates(session_id) if u.get("toolCallId") == "w1"]
        assert calls[0]["sessionUpdate"] == "tool_call"
        assert calls[0]["content"][0]["type"] == "diff"
        assert calls[-1]["status"] == status
    assert (workspace / "out.txt").exists() is (choice == "allow_once")


async def test_cancel_mid_stream(tmp_path: Path, home: Path, config: Path, workspace: Path) -> None:
    args = script_args(tmp_path, LONG_REPLY)
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        session_id = await open_session(peer, workspace)
        prompt = await streaming_prompt(peer, session_id)
        await peer.conn.cancel(session_id=session_id)
        assert (await prompt).stop_reason == "cancelled"
        answer_at = next(
            i for i, m in enumerate(peer.received) if m.get("result") == {"stopReason": "cancelled"}
        )
        assert not [m for m in peer.received[answer_at:] if m.get("method") == "session/update"]
        shown = peer.text(session_id)
    events = await _stored(home, session_id)
    assert [e.data.reason for e in events if e.type == "turn/end"] == ["cancelled"]
    assert [e.data.content for e in events if e.type == "assistant/message"] == [shown]


async def test_a_cancel_sent_right_behind_its_prompt_cancels_it(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    """The client writes `session/cancel` right after `session/prompt`, without waiting for any
    update: whichever side of the Agent's `send` it lands on, the prompt answers `cancelled` and
    the model is never asked: the one scripted reply goes to the next prompt."""
    args = script_args(tmp_path, {"text": "afterwards"})
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        session_id = await open_session(peer, workspace)
        prompt = asyncio.create_task(
            peer.conn.prompt(session_id=session_id, prompt=[text_block("stop")])
        )
        await asyncio.sleep(0)  # the prompt is written first
        await peer.conn.cancel(session_id=session_id)
        assert (await prompt).stop_reason == "cancelled"
        assert peer.text(session_id) == ""
        again = await peer.conn.prompt(session_id=session_id, prompt=[text_block("go")])
        assert again.stop_reason == "end_turn"
        assert peer.text(session_id) == "afterwards"
    events = await _stored(home, session_id)
    assert [e.data.content for e in events if e.type == "assistant/message"] == ["afterwards"]


async def test_cancel_mid_tool_and_while_permission_is_unanswered(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script_args(
        tmp_path,
        {
            "tool_calls": [
                {
                    "name": "run_shell",
                    "id": "s1",
                    "arguments": {"command": "echo started; sleep 30"},
                }
            ]
        },
        {"tool_calls": [{"name": "run_shell", "id": "s2", "arguments": {"command": "echo never"}}]},
    )
    answers = iter(["allow_once", None])

    async def answer(_: ToolCallUpdate, __: list[PermissionOption]) -> str | None:
        return next(answers)

    async with trellis_acp(
        home=home, config=config, cwd=workspace, args=args, permission=answer
    ) as peer:
        session_id = await open_session(peer, workspace)
        running = asyncio.create_task(
            peer.conn.prompt(session_id=session_id, prompt=[text_block("run")])
        )
        await until(
            lambda: any(
                u.get("toolCallId") == "s1" and u.get("status") == "in_progress"
                for u in peer.updates(session_id)
            ),
            "the tool call in progress",
        )
        await peer.conn.cancel(session_id=session_id)
        assert (await running).stop_reason == "cancelled"
        assert [u for u in peer.updates(session_id) if u.get("toolCallId") == "s1"][-1][
            "status"
        ] == "failed"

        # the client never answers this one: the cancel still ends the turn
        waiting = asyncio.create_task(
            peer.conn.prompt(session_id=session_id, prompt=[text_block("again")])
        )
        await until(lambda: len(peer.client.asked) == 2, "both permissions asked")
        await peer.conn.cancel(session_id=session_id)
        assert (await waiting).stop_reason == "cancelled"
        for never in peer.client.unanswered:
            never.cancel()


async def test_list_and_load_replay_the_whole_log_in_order(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script_args(
        tmp_path,
        {
            "text": "let me look",
            "tool_calls": [{"name": "read_file", "id": "r1", "arguments": {"path": "notes.txt"}}],
        },
        {"text": "it says milk", "reasoning": "the file is short"},
        {"text": "bye"},
    )
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        session_id = await open_session(peer, workspace)
        await peer.conn.prompt(session_id=session_id, prompt=[text_block("what do my notes say?")])
        await peer.conn.prompt(session_id=session_id, prompt=[text_block("thanks")])
    stored = await _stored(home, session_id)
    expected = list(replay_updates(stored, str(workspace)))
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        await peer.conn.initialize(protocol_version=1)
        listed = await peer.conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [session_id]
        assert listed.sessions[0].title == "what do my notes say?"
        await peer.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        answer_at = next(
            i for i, m in enumerate(peer.received) if peer.asked.get(m.get("id")) == "session/load"
        )
        replayed = [
            m["params"]["update"]
            for m in peer.received[:answer_at]
            if m.get("method") == "session/update"
        ]
        assert peer.received[answer_at]["result"].keys() == {"modes"}
    assert replayed == expected
    kinds = [u["sessionUpdate"] for u in replayed]
    assert {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call"} <= set(
        kinds
    )
    assert (
        "".join(
            u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"
        )
        == "what do my notes say?thanks"
    )


async def test_resume_goes_on_without_a_replay_and_close_lets_go(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    """The `acp` package's client resumes a stored session in a new `trellis acp`: nothing is
    replayed, a prompt goes on in the same log, and `session/close` ends its use there."""
    args = script_args(tmp_path, {"text": "one"}, {"text": "two"})
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        session_id = await open_session(peer, workspace)
        await peer.conn.prompt(session_id=session_id, prompt=[text_block("first")])
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        await peer.conn.initialize(protocol_version=1)
        await peer.conn.resume_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert peer.text(session_id, "user_message_chunk") == ""
        assert peer.text(session_id) == ""
        answer = await peer.conn.prompt(session_id=session_id, prompt=[text_block("second")])
        assert answer.stop_reason == "end_turn"
        assert peer.text(session_id) == "one"  # a new process plays its script from the start
        await peer.conn.close_session(session_id=session_id)
        with pytest.raises(RequestError) as refused:
            await peer.conn.prompt(session_id=session_id, prompt=[text_block("third")])
        assert refused.value.code == -32002
    events = await _stored(home, session_id)
    assert [e.data.content for e in events if e.type == "user/message"] == ["first", "second"]


async def test_an_mcp_stdio_servers_tool_is_used_in_a_prompt_and_a_broken_one_is_reported(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script_args(
        tmp_path,
        {"tool_calls": [{"name": "calc__add", "id": "m1", "arguments": {"a": 2, "b": 40}}]},
        {"text": "the sum is in"},
    )
    servers: list[HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio] = [
        McpServerStdio(name="calc", command=sys.executable, args=[str(FIXTURE)], env=[]),
        McpServerStdio(
            name="broken", command=sys.executable, args=[str(FIXTURE), "--crash"], env=[]
        ),
    ]
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        await peer.conn.initialize(protocol_version=1)
        session_id = (
            await peer.conn.new_session(cwd=str(workspace), mcp_servers=servers)
        ).session_id
        response = await peer.conn.prompt(session_id=session_id, prompt=[text_block("add")])
        assert response.stop_reason == "end_turn"
        result = [u for u in peer.updates(session_id) if u.get("toolCallId") == "m1"][-1]
        assert result["status"] == "completed"
        assert "42" in result["content"][0]["content"]["text"]
        assert "MCP server 'broken'" in peer.text(session_id)


async def test_every_error_case_leaves_it_serving(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    async with trellis_acp(home=home, config=config, cwd=workspace) as peer:
        with pytest.raises(RequestError) as early:
            await peer.conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert "initialize" in str(early.value)
        await peer.raw(b"{this is not json")
        await peer.raw(b'{"jsonrpc": "2.0", "id": 7}')
        await peer.raw(b"x" * (17 * 1024 * 1024))
        errors = await peer.errors_for(None, 7, None)
        assert [e["error"]["code"] for e in errors] == [-32700, -32600, -32600]
        assert "16 MiB" in errors[2]["error"]["message"]
        session_id = await open_session(peer, workspace)
        with pytest.raises(RequestError) as unknown_method:
            await peer.conn.ext_method("nothing/here", {})
        assert unknown_method.value.code == -32601
        with pytest.raises(RequestError) as bad_params:
            await peer.conn._conn.send_request("session/prompt", {"sessionId": session_id})
        assert bad_params.value.code == -32602
        assert "prompt" in str(bad_params.value)
        with pytest.raises(RequestError) as unknown_session:
            await peer.conn.prompt(session_id="0" * 32, prompt=[text_block("hi")])
        assert unknown_session.value.code == -32002
        response = await peer.conn.prompt(
            session_id=session_id, prompt=[text_block("still there?")]
        )
        assert response.stop_reason == "end_turn"
    log = (home / "trellis.log").read_text()
    assert "over the 16 MiB limit" in log


async def test_a_thousand_malformed_or_random_messages_leave_it_serving(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    rng = random.Random(13)
    methods = [
        "initialize",
        "session/new",
        "session/load",
        "session/prompt",
        "session/cancel",
        "session/list",
        "session/set_config_option",
        "_trellis/inject",
        "x",
        "",
    ]
    values: list[Any] = [None, 0, -1, 1.5, "", "x" * 50, [], {}, [1, "a"], {"a": {"b": None}}, True]

    def junk() -> bytes:
        kind = rng.randrange(5)
        if kind == 0:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60))).replace(
                b"\n", b" "
            )
        if kind == 1:
            return json.dumps(rng.choice(values)).encode()
        message: dict[str, Any] = {"jsonrpc": rng.choice(["2.0", "1.0", None])}
        if rng.random() < 0.8:
            message["method"] = rng.choice(methods + values)
        if rng.random() < 0.7:
            message["id"] = rng.choice([rng.randrange(10**6), "id", None, [], {}, 1.5])
        if rng.random() < 0.8:
            params = {
                k: rng.choice(values)
                for k in rng.sample(
                    [
                        "sessionId",
                        "cwd",
                        "prompt",
                        "mcpServers",
                        "cursor",
                        "configId",
                        "value",
                        "protocolVersion",
                    ],
                    3,
                )
            }
            message["params"] = rng.choice([params, rng.choice(values)])
        text = json.dumps(message)
        return text[: rng.randrange(len(text) + 1)].encode() if kind == 4 else text.encode()

    async with trellis_acp(home=home, config=config, cwd=workspace) as peer:
        for _ in range(1000):
            await peer.raw(junk())
        session_id = await open_session(peer, workspace)
        response = await peer.conn.prompt(
            session_id=session_id, prompt=[text_block("hello after the noise")]
        )
        assert response.stop_reason == "end_turn"
        assert peer.process.returncode is None


async def test_a_session_held_by_another_process_loads_read_only(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    async with trellis_acp(home=home, config=config, cwd=workspace) as holder:
        session_id = await open_session(holder, workspace)
        await holder.conn.prompt(session_id=session_id, prompt=[text_block("first words")])
        async with trellis_acp(home=home, config=config, cwd=workspace) as reader:
            await reader.conn.initialize(protocol_version=1)
            loaded = await reader.conn.load_session(
                cwd=str(workspace), session_id=session_id, mcp_servers=[]
            )
            assert loaded is not None
            assert reader.text(session_id, "user_message_chunk") == "first words"
            with pytest.raises(RequestError) as refused:
                await reader.conn.prompt(session_id=session_id, prompt=[text_block("mine now?")])
            assert refused.value.code == -32011
            assert "read-only" in str(refused.value)


async def _streaming(peer: StdioPeer, workspace: Path) -> tuple[str, asyncio.Task[PromptResponse]]:
    """A new session whose prompt `go` has started streaming its reply."""
    session_id = await open_session(peer, workspace)
    prompt = asyncio.create_task(peer.conn.prompt(session_id=session_id, prompt=[text_block("go")]))
    await until(lambda: bool(peer.text(session_id)), "some reply text")
    return session_id, prompt


async def test_closing_stdin_mid_prompt_stores_the_cancelled_turn_and_a_reload_replays_it(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script_args(tmp_path, {"text": "slow " * 500, "chunk_delay": 0.01})
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        session_id, prompt = await _streaming(peer, workspace)
    with pytest.raises(ConnectionError):  # the client side went away with its prompt open
        await prompt
    events = await _stored(home, session_id)
    assert [e.data.reason for e in events if e.type == "turn/end"] == ["cancelled"]
    async with trellis_acp(home=home, config=config, cwd=workspace) as again:
        await again.conn.initialize(protocol_version=1)
        await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert again.text(session_id, "user_message_chunk") == "go"


def _run_acp(
    args: list[str], text: str, *, home: Path, config: Path, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """`trellis acp ARGS` fed `text` on stdin to its end; the timeout only stops a hung child."""
    return subprocess.run(
        acp_argv(args),
        input=text,
        cwd=cwd,
        env=trellis_env(home=home, config=config),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_stdout_carries_nothing_but_acp(home: Path, config: Path, workspace: Path) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines) + "oops\n"
    done = _run_acp([], text, home=home, config=config, cwd=workspace)
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(m["jsonrpc"] == "2.0" for m in out)
    assert {m["id"] for m in out} >= {1, None}


def test_a_bad_root_is_one_clear_line(home: Path, config: Path, workspace: Path) -> None:
    done = _run_acp(
        ["--root", str(workspace / "missing")], "", home=home, config=config, cwd=workspace
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "is not a directory" in done.stderr


async def test_sigterm_mid_prompt_ends_the_turn_cancelled_and_exits(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script_args(tmp_path, {"text": "slow " * 500, "chunk_delay": 0.01})
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        session_id, prompt = await _streaming(peer, workspace)
        peer.process.send_signal(signal.SIGTERM)
        assert await peer.process.wait() == 0
    with pytest.raises(ConnectionError):
        await prompt
    events = await _stored(home, session_id)
    assert [e.data.reason for e in events if e.type == "turn/end"] == ["cancelled"]
