"""Two `trellis serve` processes on one PostgreSQL database (issue 14): a session written through
one is replayed whole by the other's `session/load` and then followed live, and `trellis sessions`
lists what both wrote.

The first server is given the store by `--store URL`, the second by the user config's `[store]
url`, so both ways of naming it are exercised; the password comes from the variable
`[store] password_env` names.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.exceptions import RequestError

from app.acp import rpc
from engine.events import Event, UserMessage
from engine.store.postgres.store import PostgresStore
from replay.acp import replay_updates
from tests.acp.stdio_peer import trellis_acp
from tests.acp.ws_peer import RecordingClient, ServeProcess, acp_client, serving
from tests.agent.harness import payloads, trellis_argv, trellis_env
from tests.pg_cluster import PASSWORD, Cluster
from tests.processes import POLL, POLLS
from tests.store.test_store_copy import PASSWORD_VAR, new_database

OPENING_NOTES = ("available_commands_update", "config_option_update")
"""Sent after `session/new` and `session/load` answer: not part of the session's log."""


@dataclass(frozen=True, slots=True)
class TwoServers:
    first: ServeProcess
    second: ServeProcess
    url: str
    root: Path
    config: Path


@pytest.fixture(scope="module")
def two_servers(
    pg_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TwoServers]:
    """Two `trellis serve` processes, each with its own data directory, on one database."""
    base = tmp_path_factory.mktemp("two-servers")
    url = asyncio.run(new_database(pg_cluster))
    root = base / "root"
    root.mkdir()
    password = {PASSWORD_VAR: PASSWORD}
    named = f'[store]\npassword_env = "{PASSWORD_VAR}"\n'
    configured = f'[store]\nurl = "{url}"\npassword_env = "{PASSWORD_VAR}"\n'
    with (
        serving(
            base, name="first", root=root, config=named, args=["--store", url], env=password
        ) as first,
        serving(base, name="second", root=root, config=configured, env=password) as second,
    ):
        yield TwoServers(first, second, url, root.resolve(), base / "second" / "config.toml")


async def stored(servers: TwoServers, session_id: str) -> list[Event]:
    async with PostgresStore(servers.url, password=PASSWORD) as store:
        return await store.read(session_id)


def session_updates(client: RecordingClient, session_id: str) -> list[dict[str, Any]]:
    """What the client was sent of the session's log (the opening notes left out)."""
    return [
        update
        for update in client.updates.get(session_id, [])
        if update["sessionUpdate"] not in OPENING_NOTES
    ]


def as_loaded(events: list[Event], workspace: Path) -> list[dict[str, Any]]:
    """The updates `session/load` of the whole stored log sends, in log order."""
    return list(replay_updates(events, str(workspace)))


async def until_shown(client: RecordingClient, session_id: str, expected: list[Any]) -> None:
    """Once the client was sent `expected` (bounded polling: the follow is asynchronous)."""
    for _ in range(POLLS):
        if session_updates(client, session_id) == expected:
            return
        await asyncio.sleep(POLL)
    assert session_updates(client, session_id) == expected


async def test_a_session_written_through_one_server_is_replayed_then_followed_by_the_other(
    two_servers: TwoServers,
) -> None:
    root = str(two_servers.root)
    async with (
        acp_client(two_servers.first.url) as (writer, _),
        acp_client(two_servers.second.url) as (reader, follower),
    ):
        session_id = (await writer.new_session(cwd=root)).session_id
        answer = await writer.prompt(session_id=session_id, prompt=[text_block("hello there")])
        assert answer.stop_reason == "end_turn"

        loaded = await reader.load_session(cwd=root, session_id=session_id)
        assert loaded.field_meta is not None
        assert "open for writing in another process" in loaded.field_meta["trellis/readOnly"]
        first_turn = await stored(two_servers, session_id)
        replayed = as_loaded(first_turn, two_servers.root)
        assert session_updates(follower, session_id) == replayed  # whole, in log order
        assert any(u["sessionUpdate"] == "user_message_chunk" for u in replayed)

        answer = await writer.prompt(session_id=session_id, prompt=[text_block("and again")])
        assert answer.stop_reason == "end_turn"
        both_turns = await stored(two_servers, session_id)
        assert len(both_turns) > len(first_turn)
        await until_shown(follower, session_id, as_loaded(both_turns, two_servers.root))

        with pytest.raises(RequestError) as refused:
            await reader.prompt(session_id=session_id, prompt=[text_block("mine now?")])
        assert refused.value.code == rpc.SESSION_READ_ONLY
        assert "open for writing in another process" in str(refused.value)
    assert await stored(two_servers, session_id) == both_turns  # the refused prompt wrote nothing


async def test_trellis_sessions_lists_what_both_servers_wrote(two_servers: TwoServers) -> None:
    root = str(two_servers.root)
    written: list[str] = []
    for server in (two_servers.first, two_servers.second):
        async with acp_client(server.url) as (connection, _):
            session_id = (await connection.new_session(cwd=root)).session_id
            await connection.prompt(session_id=session_id, prompt=[text_block(f"via {server.url}")])
            written.append(session_id)
    home = two_servers.config.parent / "lister"
    env = {**trellis_env(home=home, config=two_servers.config), PASSWORD_VAR: PASSWORD}
    listed = await asyncio.to_thread(
        subprocess.run,
        trellis_argv(["sessions", "--all", "--json"]),
        cwd=two_servers.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert set(written) <= {session["id"] for session in json.loads(listed.stdout)}
    assert not (home / "sessions.sqlite").exists()  # listed from PostgreSQL, not a local file


async def test_trellis_acp_stores_its_sessions_in_the_store_named_by_store(
    two_servers: TwoServers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_VAR, PASSWORD)
    config = tmp_path / "config.toml"
    config.write_text(f'[store]\npassword_env = "{PASSWORD_VAR}"\n', encoding="utf-8")
    async with trellis_acp(
        home=tmp_path / "home",
        config=config,
        cwd=two_servers.root,
        args=["--store", two_servers.url],
    ) as peer:
        await peer.conn.initialize(protocol_version=1)
        session_id = (await peer.conn.new_session(cwd=str(two_servers.root))).session_id
        await peer.conn.prompt(session_id=session_id, prompt=[text_block("over stdio")])
    messages = payloads(await stored(two_servers, session_id), UserMessage)
    assert [m.content for m in messages] == ["over stdio"]
    assert not (tmp_path / "home" / "sessions.sqlite").exists()


@pytest.mark.parametrize("command", ["serve", "acp"])
@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("postgresql://me:hunter22@127.0.0.1/db", "carries a password"),
        ("mysql://127.0.0.1/db", "expected a postgresql:// URL"),
    ],
)
def test_a_bad_store_url_is_one_line_and_exit_2(
    tmp_path: Path, command: str, url: str, why: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    done = subprocess.run(
        trellis_argv([command, "--store", url]),
        cwd=tmp_path,
        env=trellis_env(home=tmp_path / "home", config=config),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("trellis: --store: ")
    assert why in done.stderr
    assert "hunter22" not in done.stderr
    assert len(done.stderr.splitlines()) == 1
