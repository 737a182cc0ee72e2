"""PostgreSQL faults come out as the store errors the front ends handle, naming the server (never
a password) and the cause; the password comes from PGPASSFILE when the store is given none."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from engine.session import Session
from engine.store.errors import (
    DatabaseLockedError,
    SchemaVersionError,
    StoreUnavailableError,
)
from engine.store.postgres.store import PostgresStore
from tests.pg_cluster import PASSWORD, Cluster, free_port
from tests.store.conftest import full_turn


async def test_an_unreachable_server_is_unavailable() -> None:
    url = f"postgresql://me@127.0.0.1:{free_port()}/db"
    with pytest.raises(StoreUnavailableError, match=rf"{url}: connecting failed"):
        await PostgresStore(url, password="not-shown-anywhere").open()


async def test_a_wrong_password_is_refused_and_never_shown(pg_cluster: Cluster) -> None:
    with pytest.raises(StoreUnavailableError, match="password authentication failed") as refused:
        await PostgresStore(pg_cluster.url, password="wrong-password-123").open()
    assert "wrong-password-123" not in str(refused.value)


async def test_the_password_comes_from_pgpassfile(
    pg_cluster: Cluster, pg_schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{pg_cluster.port}:*:trellis:{PASSWORD}\n", encoding="utf-8")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    async with PostgresStore(pg_cluster.url, schema=pg_schema) as store:
        assert (await store.list()).sessions == ()


async def test_a_newer_schema_is_refused(pg_cluster: Cluster, pg_schema: str) -> None:
    async with PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema):
        pass
    conn = await asyncpg.connect(pg_cluster.url, password=PASSWORD)
    try:
        await conn.execute(f"UPDATE {pg_schema}.meta SET schema_version = 99")
    finally:
        await conn.close()
    with pytest.raises(SchemaVersionError, match="version 99, newer than this Trellis"):
        await PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema).open()


async def test_first_opens_at_the_same_moment_both_succeed(
    pg_cluster: Cluster, pg_schema: str
) -> None:
    stores = [PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) for _ in range(4)]
    await asyncio.gather(*(store.open() for store in stores))
    for store in stores:
        await store.aclose()


async def test_a_row_held_too_long_is_a_locked_error_and_the_flush_is_kept(
    pg_cluster: Cluster, pg_schema: str
) -> None:
    store = await PostgresStore(
        pg_cluster.url, password=PASSWORD, schema=pg_schema, busy_timeout=0.2
    ).open()
    try:
        session = Session((await store.create(cwd="/w")).id, store)
        full_turn(session)
        conn = await asyncpg.connect(pg_cluster.url, password=PASSWORD)
        try:
            async with conn.transaction():
                await conn.execute(
                    f"SELECT 1 FROM {pg_schema}.leases WHERE session_id = $1 FOR UPDATE",
                    session.id,
                )
                with pytest.raises(DatabaseLockedError, match="flushing events failed"):
                    await session.flush()
        finally:
            await conn.close()
        assert session.pending == session.next_seq  # nothing lost: flushed again below
        await session.flush()
        assert await store.read(session.id) == list(await session.read(0, session.next_seq))
    finally:
        await store.aclose()
