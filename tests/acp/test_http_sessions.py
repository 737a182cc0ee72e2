"""Sessions over streamable HTTP against `trellis serve` as a real process (issue 29, section 4),
driven by the `acp` package's HTTP client (`acp.http.create_http_stream`): a prompt streams its
updates, a permission request goes out on the session's stream and its answer comes back as a
POST, cancel ends a turn, DELETE (the client's close) cancels a running one, and a new connection
loads the session with its replay. Over HTTP/2 (prior knowledge) and over the package's default
client, which speaks HTTP/1.1 to a plain `http://` URL."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import pytest
from acp import text_block

from engine.events import Event, TurnEnd
from tests.acp.http_peer import h2_client, http_acp_client, http_url
from tests.acp.test_ws_sessions import SLOW_DELAY, SLOW_WORDS, streaming, wait_for_turn_end
from tests.acp.ws_peer import WAIT, RecordingClient, ServeProcess, serving
from tests.agent.harness import payloads
from tests.processes import POLL, POLLS

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("http2", [True, False], ids=["http2", "package-default"])
async def test_a_prompt_streams_its_updates_before_its_answer(tmp_path: Path, http2: bool) -> None:
    versions: list[str] = []
    with serving(tmp_path) as server:
        async with (
            h2_client(versions) if http2 else contextlib.nullcontext() as http,
            http_acp_client(http_url(server), http=http) as (connection, client),
        ):
            new = await connection.new_session(cwd=str(server.root))
            answer = await asyncio.wait_for(
                connection.prompt(session_id=new.session_id, prompt=[text_block("say something")]),
                WAIT,
            )
            kinds = client.kinds(new.session_id)
    assert answer.stop_reason == "end_turn"
    assert kinds[0] == "available_commands_update"
    assert kinds.count("agent_message_chunk") > 1
    assert "usage_update" in kinds
    if http2:
        assert versions
        assert set(versions) == {"HTTP/2"}


async def test_two_sessions_on_one_connection_keep_their_updates_apart(tmp_path: Path) -> None:
    with serving(tmp_path) as server:
        async with (
            h2_client() as http,
            http_acp_client(http_url(server), http=http) as (connection, client),
        ):
            first = (await connection.new_session(cwd=str(server.root))).session_id
            second = (await connection.new_session(cwd=str(server.root))).session_id
            answers = await asyncio.wait_for(
                asyncio.gather(
                    connection.prompt(session_id=first, prompt=[text_block("one")]),
                    connection.prompt(session_id=second, prompt=[text_block("two")]),
                ),
                WAIT,
            )
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn"]
    assert client.text(first)
    assert client.text(second)
    assert client.kinds(first).count("agent_message_chunk") > 1
    assert client.kinds(second).count("agent_message_chunk") > 1


def slow_model(tmp_path: Path, *, replies: int) -> str:
    """A user config whose default model streams `replies` long replies slowly."""
    script = tmp_path / "slow.json"
    reply = {"text": "word " * SLOW_WORDS, "chunk_delay": SLOW_DELAY}
    script.write_text(json.dumps({"replies": [reply] * replies}), encoding="utf-8")
    return f'default_model = "slow"\n[models.slow]\nprovider = "scripted"\nscript = "{script}"\n'


def tool_model(tmp_path: Path) -> str:
    """A model that writes a file (which needs permission), then says it did."""
    script = tmp_path / "tool.json"
    replies = [
        {
            "text": "",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "made.txt", "content": "hello\n"}}
            ],
        },
        {"text": "written"},
    ]
    script.write_text(json.dumps({"replies": replies}), encoding="utf-8")
    return f'default_model = "tool"\n[models.tool]\nprovider = "scripted"\nscript = "{script}"\n'


@pytest.mark.parametrize("permission", ["allow_once", "reject_once"])
async def test_a_permission_request_is_answered_by_post(tmp_path: Path, permission: str) -> None:
    with serving(tmp_path, config=tool_model(tmp_path)) as server:
        recorder = RecordingClient(permission=permission)
        async with (
            h2_client() as http,
            http_acp_client(http_url(server), recorder, http=http) as (connection, client),
        ):
            session = (await connection.new_session(cwd=str(server.root))).session_id
            answer = await asyncio.wait_for(
                connection.prompt(session_id=session, prompt=[text_block("write it")]), WAIT
            )
        made = server.root / "made.txt"
        assert answer.stop_reason == "end_turn"
        assert len(client.permission_requests) == 1
        assert made.exists() is (permission == "allow_once")
        assert client.text(session) == "written"


async def test_cancel_ends_the_turn_and_delete_cancels_a_running_one(tmp_path: Path) -> None:
    with serving(tmp_path, config=slow_model(tmp_path, replies=2)) as server:
        url = http_url(server)
        async with h2_client() as http:
            async with http_acp_client(url, http=http) as (connection, client):
                session = (await connection.new_session(cwd=str(server.root))).session_id
                prompt = asyncio.create_task(
                    connection.prompt(session_id=session, prompt=[text_block("go on")])
                )
                await streaming(client, session)
                await connection.cancel(session_id=session)
                answer = await asyncio.wait_for(prompt, WAIT)
                client.updates.clear()
                running = asyncio.create_task(
                    connection.prompt(session_id=session, prompt=[text_block("and again")])
                )
                await streaming(client, session)
            # the block's end closed the client: its DELETE ends the connection
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            events = await wait_for_ends(server, session, 2)
    assert answer.stop_reason == "cancelled"
    assert [end.reason for end in payloads(events, TurnEnd)] == ["cancelled", "cancelled"]


async def wait_for_ends(server: ServeProcess, session: str, count: int) -> tuple[Event, ...]:
    """The session's log once `count` turns have stored their end (bounded polling)."""
    for _ in range(POLLS):
        events = await wait_for_turn_end(server, session)
        ends = [e for e in payloads(events, TurnEnd) if e.reason != "interrupted"]
        if len(ends) >= count:
            return events
        await asyncio.sleep(POLL)
    raise AssertionError(f"session {session} never stored {count} turn ends")


async def test_a_new_connection_loads_the_session_with_its_replay(tmp_path: Path) -> None:
    with serving(tmp_path) as server:
        url = http_url(server)
        async with (
            h2_client() as http,
            http_acp_client(url, http=http) as (connection, client),
        ):
            session = (await connection.new_session(cwd=str(server.root))).session_id
            await asyncio.wait_for(
                connection.prompt(session_id=session, prompt=[text_block("remember me")]), WAIT
            )
            said = client.text(session)
        async with (
            h2_client() as http,
            http_acp_client(url, http=http) as (again, second),
        ):
            await asyncio.wait_for(
                again.load_session(cwd=str(server.root), session_id=session), WAIT
            )
            await wait_for_text(second, session, said)
            told = second.text(session, "user_message_chunk")
            answer = await asyncio.wait_for(
                again.prompt(session_id=session, prompt=[text_block("and now")]), WAIT
            )
    assert told == "remember me"
    assert answer.stop_reason == "end_turn"


async def wait_for_text(client: RecordingClient, session: str, text: str) -> None:
    """Once the client has the session's reply `text` (a replay may still be arriving on the
    connection's stream when the load's answer is read)."""
    for _ in range(POLLS):
        if client.text(session).startswith(text):
            return
        await asyncio.sleep(POLL)
    raise AssertionError(f"the replay never brought {text!r}: {client.text(session)!r}")


async def test_stopping_the_server_ends_the_streams_and_stores_the_running_turn(
    tmp_path: Path,
) -> None:
    with serving(tmp_path, config=slow_model(tmp_path, replies=1)) as server:
        async with (
            h2_client() as http,
            http_acp_client(http_url(server), http=http) as (connection, client),
        ):
            session = (await connection.new_session(cwd=str(server.root))).session_id
            prompt = asyncio.create_task(
                connection.prompt(session_id=session, prompt=[text_block("go on")])
            )
            await streaming(client, session)
            code = await asyncio.to_thread(server.stop)
            # the connection's stream ended: the client fails its pending prompt
            with pytest.raises(ConnectionError, match="Connection closed"):
                await asyncio.wait_for(prompt, WAIT)
        events = await wait_for_turn_end(server, session)
    assert code == 0
    assert [end.reason for end in payloads(events, TurnEnd)] == ["cancelled"]
