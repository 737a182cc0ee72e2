"""The PostgreSQL store's connections (engine/store/postgres/database.py): statements one at a time run on
the store's own connection, so a command that makes them opens one; a statement cancelled midway
leaves it sound."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from engine.session import Session
from engine.store.postgres.store import PostgresStore
from tests.pg_cluster import PASSWORD, Cluster
from tests.store.conftest import full_turn


async def _connections(cluster: Cluster) -> int:
    admin = await asyncpg.connect(cluster.url, password=PASSWORD)
    try:
        count = await admin.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'trellis'"
        )
    finally:
        await admin.close()
    return int(count)


async def test_statements_one_at_a_time_use_one_connection(
    pg_cluster: Cluster, pg_schema: str
) -> None:
    before = await _connections(pg_cluster)
    async with PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as store:
        session = Session((await store.create(cwd="/w")).id, store)
        full_turn(session)
        await session.flush()
        await store.read(session.id)
        await store.list()
        assert await _connections(pg_cluster) == before + 1


async def test_a_statement_cancelled_midway_leaves_the_store_usable(
    pg_cluster: Cluster, pg_schema: str
) -> None:
    """The store's own connection (engine.store.postgres.database) is dropped when a block is cancelled in
    the middle of a statement; the next statement gets a sound connection."""
    async with PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as store:
        session = Session((await store.create(cwd="/w")).id, store)
        full_turn(session)
        await session.flush()
        await store.release(session.id)
        conn = await asyncpg.connect(pg_cluster.url, password=PASSWORD)
        admin = await asyncpg.connect(pg_cluster.url, password=PASSWORD)
        try:
            async with conn.transaction():
                await conn.execute(f"LOCK TABLE {pg_schema}.sessions IN ACCESS EXCLUSIVE MODE")
                waiting = asyncio.create_task(store.info(session.id))
                await _until_one_waits_for_a_lock(admin)
                waiting.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await waiting
        finally:
            await conn.close()
            await admin.close()
        assert (await store.info(session.id)).event_count == session.next_seq
        assert await store.read(session.id) == list(await session.read(0, session.next_seq))


async def _until_one_waits_for_a_lock(admin: asyncpg.Connection[asyncpg.Record]) -> None:
    """Return once a statement of the store's waits for a lock (read again after each look)."""
    waiting = "WHERE wait_event_type = 'Lock' AND application_name = 'trellis'"
    for _ in range(10_000):
        if await admin.fetchval(f"SELECT count(*) FROM pg_stat_activity {waiting}"):
            return
    raise AssertionError("the store's statement never waited for the lock")
