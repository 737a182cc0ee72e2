"""`trellis store copy --to URL` moves SQLite sessions (forks and crash-repaired tails included)
into PostgreSQL, verified; `trellis sessions` then lists them from PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import asyncpg

from engine.session import Session
from engine.store.postgres.store import PostgresStore
from engine.store.sqlite.store import SQLiteStore
from tests.agent.harness import trellis_argv, trellis_env
from tests.pg_cluster import PASSWORD, Cluster
from tests.store.conftest import full_turn, open_turn, step

PASSWORD_VAR = "PG_COPY_TEST_PASSWORD"


async def sqlite_with_every_kind_of_session(path: Path) -> list[str]:
    """A plain session, a fork of it, a crashed one repaired by a load, one crashed and never
    loaded since (its open tail stored as it is)."""
    async with SQLiteStore(path) as store:
        plain = Session((await store.create(cwd="/w", title="plain")).id, store)
        full_turn(plain)
        cut = plain.next_seq
        full_turn(plain, "second")
        await plain.flush()
        fork = await store.fork(plain.id, cut)
        crashed: list[str] = []
        for _ in range(2):
            session = Session((await store.create(cwd="/x")).id, store)
            full_turn(session)
            step(session, open_turn(session), calls=2, results=1)
            await session.flush()
            crashed.append(session.id)
    async with SQLiteStore(path) as store:
        repaired = await store.load(crashed[0])  # commits the repair of its tail
        assert repaired.repaired
    return [plain.id, fork.id, *crashed]


async def new_database(cluster: Cluster) -> str:
    name = f"copy_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(cluster.url, password=PASSWORD)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return cluster.url.rsplit("/", 1)[0] + f"/{name}"


def run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = trellis_env(home=tmp_path / "home", config=tmp_path / "config.toml")
    env[PASSWORD_VAR] = PASSWORD
    return subprocess.run(
        trellis_argv(args),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_copy_verifies_every_session_and_sessions_lists_them(
    pg_cluster: Cluster, tmp_path: Path
) -> None:
    sqlite_path = tmp_path / "home" / "sessions.sqlite"
    ids = await sqlite_with_every_kind_of_session(sqlite_path)
    url = await new_database(pg_cluster)
    (tmp_path / "config.toml").write_text(
        f'[store]\npassword_env = "{PASSWORD_VAR}"\n', encoding="utf-8"
    )

    done = run(["store", "copy", "--to", url], tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(line.split()[1].rstrip(":") for line in done.stdout.splitlines()) == sorted(ids)
    assert "4 sessions copied, 0 already there" in done.stderr

    async with SQLiteStore(sqlite_path) as source, PostgresStore(url, password=PASSWORD) as target:
        for session_id in ids:
            assert await target.info(session_id) == await source.info(session_id)
            assert await target.read(session_id) == await source.read(session_id)
        assert (await target.info(ids[1])).parent_id == ids[0]
        open_tail = await target.inspect(ids[3])  # stored as it was: repaired when loaded
        assert [e.type for e in open_tail.repaired] == ["tool/result", "step/end", "turn/end"]

    again = run(["store", "copy", "--to", url], tmp_path)
    assert again.returncode == 0, again.stderr
    assert "0 sessions copied, 4 already there" in again.stderr

    (tmp_path / "config.toml").write_text(
        f'[store]\nurl = "{url}"\npassword_env = "{PASSWORD_VAR}"\n', encoding="utf-8"
    )
    listed = run(["sessions", "--all", "--json"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert sorted(s["id"] for s in json.loads(listed.stdout)) == sorted(ids)


def test_a_url_with_a_password_is_refused_without_showing_it(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "sessions.sqlite").write_bytes(b"")
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    done = run(["store", "copy", "--to", "postgresql://me:hunter22@127.0.0.1/db"], tmp_path)
    assert done.returncode == 2
    assert "carries a password" in done.stderr
    assert "hunter22" not in done.stderr + done.stdout
    assert len(done.stderr.splitlines()) == 1
