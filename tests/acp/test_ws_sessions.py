"""Sessions over WebSocket against `trellis serve` as a real process (issue 13, items 1 and 6): a
prompt streams its updates, and a connection that drops mid-prompt cancels that turn, which is
stored, so reconnecting and loading the session replays it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from pathlib import Path
from typing import cast

import pytest
from acp import connect_to_agent, text_block
from acp.interfaces import Client
from acp.ws import create_websocket_stream

from engine.events import AssistantMessage, Event, TurnEnd, UserMessage
from engine.store.sqlite.store import SQLiteStore
from tests.acp.ws_peer import (
    WAIT,
    RecordingClient,
    ServeProcess,
    acp_client,
    bearer,
    serving,
)
from tests.agent.harness import payloads
from tests.processes import POLL, POLLS


async def stored(server: ServeProcess, session_id: str) -> tuple[Event, ...]:
    """The session's log as the server stored it (read without taking its lease)."""
    async with SQLiteStore(server.db) as store:
        return (await store.inspect(session_id)).events


async def test_a_prompt_streams_its_updates_before_its_answer(tmp_path: Path) -> None:
    with serving(tmp_path) as server:
        async with acp_client(server.url) as (connection, client):
            new = await connection.new_session(cwd=str(server.root))
            answer = await connection.prompt(
                session_id=new.session_id, prompt=[text_block("say something")]
            )
            kinds = client.kinds(new.session_id)
            streamed = client.text(new.session_id)
        events = await stored(server, new.session_id)
    assert answer.stop_reason == "end_turn"
    assert kinds[0] == "available_commands_update"
    assert kinds.count("agent_message_chunk") > 1  # streamed in pieces, not as one block
    assert "usage_update" in kinds
    assert streamed == payloads(events, AssistantMessage)[-1].content


SLOW_WORDS = 400
SLOW_DELAY = 0.05
"""The slow model's reply: 400 words, one every 50 ms (20 s in all), so a drop lands inside it."""


def slow_model(tmp_path: Path) -> str:
    """A user config whose default model streams a long reply slowly."""
    script = tmp_path / "slow.json"
    reply = {"text": "word " * SLOW_WORDS, "chunk_delay": SLOW_DELAY}
    script.write_text(json.dumps({"replies": [reply]}), encoding="utf-8")
    return f'default_model = "slow"\n[models.slow]\nprovider = "scripted"\nscript = "{script}"\n'


async def streaming(client: RecordingClient, session_id: str) -> None:
    """Once the reply has started to stream (bounded polling)."""
    for _ in range(POLLS):
        if "agent_message_chunk" in client.kinds(session_id):
            return
        await asyncio.sleep(POLL)
    raise AssertionError(f"session {session_id} never streamed a reply")


async def wait_for_turn_end(server: ServeProcess, session_id: str) -> tuple[Event, ...]:
    for _ in range(POLLS):
        events = await stored(server, session_id)
        # `inspect` shows a turn still open as repaired (`interrupted`): wait for the stored end
        if any(end.reason != "interrupted" for end in payloads(events, TurnEnd)):
            return events
        await asyncio.sleep(POLL)
    raise AssertionError(f"session {session_id} never stored its turn's end")


async def test_a_dropped_prompt_is_cancelled_and_stored_and_loading_replays_it(
    tmp_path: Path,
) -> None:
    with serving(tmp_path, config=slow_model(tmp_path)) as server:
        # 1. a prompt streams on a connection made with the package's WebSocket client
        transport = await create_websocket_stream(server.url, headers=bearer())
        first = RecordingClient()
        connection = connect_to_agent(cast(Client, first), transport)
        await asyncio.wait_for(connection.initialize(protocol_version=1), WAIT)
        session_id = (await connection.new_session(cwd=str(server.root))).session_id
        prompt = asyncio.create_task(
            connection.prompt(session_id=session_id, prompt=[text_block("tell me")])
        )
        await streaming(first, session_id)
        # 2. the socket drops without a closing handshake, as when the editor dies
        transport._ws.transport.abort()  # type: ignore[attr-defined]
        with contextlib.suppress(Exception):
            await prompt
        await connection.close()
        events = await wait_for_turn_end(server, session_id)
        # 3. a new connection loads the session: the cut turn is replayed, and it takes prompts
        async with acp_client(server.url) as (again, second):
            await again.load_session(cwd=str(server.root), session_id=session_id)
            replayed = list(second.updates[session_id])
            second.updates.clear()
            another = asyncio.create_task(
                again.prompt(session_id=session_id, prompt=[text_block("again")])
            )
            await streaming(second, session_id)
            await again.cancel(session_id=session_id)
            answer = await asyncio.wait_for(another, WAIT)
    assert [end.reason for end in payloads(events, TurnEnd)] == ["cancelled"]
    cut = payloads(events, AssistantMessage)[0]
    assert cut.finish == "cancelled"
    assert 0 < len(cut.content) < len("word " * SLOW_WORDS)
    assert [m.content for m in payloads(events, UserMessage)] == ["tell me"]
    told = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    said = "".join(
        u["content"]["text"] for u in replayed if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert (told, said) == (["tell me"], cut.content)
    assert answer.stop_reason == "cancelled"


async def test_sigterm_during_a_prompt_stores_the_turn_cancelled(tmp_path: Path) -> None:
    with serving(tmp_path, config=slow_model(tmp_path)) as server:
        async with acp_client(server.url) as (connection, client):
            session_id = (await connection.new_session(cwd=str(server.root))).session_id
            prompt = asyncio.create_task(
                connection.prompt(session_id=session_id, prompt=[text_block("tell me")])
            )
            await streaming(client, session_id)
            code = await asyncio.to_thread(server.stop, signal.SIGTERM)
            with contextlib.suppress(Exception):  # the server went away mid-prompt
                await prompt
        events = await stored(server, session_id)
    assert code == 0
    assert [end.reason for end in payloads(events, TurnEnd)] == ["cancelled"]
    assert payloads(events, AssistantMessage)[0].finish == "cancelled"


@pytest.mark.slow
async def test_fifty_clients_five_prompts_each(tmp_path: Path) -> None:
    """The load test: 50 concurrent connections on the offline model, each with its session."""
    with serving(tmp_path) as server:

        async def client(n: int) -> tuple[str, list[str]]:
            async with acp_client(server.url, RecordingClient()) as (connection, _):
                session = (await connection.new_session(cwd=str(server.root))).session_id
                reasons: list[str] = []
                for i in range(5):
                    text = text_block(f"client {n} prompt {i}")
                    answer = await connection.prompt(session_id=session, prompt=[text])
                    reasons.append(answer.stop_reason)
                return session, reasons

        results = await asyncio.wait_for(asyncio.gather(*(client(n) for n in range(50))), 600)
        logs = {session: await stored(server, session) for session, _ in results}
    assert [reasons for _, reasons in results] == [["end_turn"] * 5] * 50
    assert len(logs) == 50
    for n, (session, _) in enumerate(results):
        told = [m.content for m in payloads(logs[session], UserMessage)]
        assert told == [f"client {n} prompt {i}" for i in range(5)]
        assert [end.reason for end in payloads(logs[session], TurnEnd)] == ["completed"] * 5
