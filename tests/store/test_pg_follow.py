"""Following a session another process writes: the stored events, then each flush as it commits,
through the ordinary Session API (`engine.replica`), with no gap and no polling."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import asyncpg
import pytest

from engine.events import Event, LiveEvent
from engine.replica import followed_session
from engine.store.postgres.store import PostgresStore
from tests.pg_cluster import PASSWORD, Cluster
from tests.store.test_pg_lease import Writer

FOLLOW_WAIT = 60.0
"""Seconds before a follower that never sees an event fails the test (a hang, not a speed)."""


@pytest.fixture
def writer(pg_cluster: Cluster, pg_schema: str) -> Iterator[Writer]:
    started = Writer(pg_cluster, pg_schema, ttl=30.0)
    yield started
    started.end()


async def test_a_reader_follows_another_process_live_with_no_gap(
    pg_cluster: Cluster, pg_schema: str, writer: Writer
) -> None:
    session_id = writer.ready["id"]
    async with (
        PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as store,
        followed_session(store, session_id) as replica,
    ):
        seen: list[Event] = []
        arrived = asyncio.Event()
        expected: list[int] = list(writer.ready["seqs"])

        def on_event(event: Event | LiveEvent) -> None:
            assert isinstance(event, Event)
            seen.append(event)
            arrived.set()

        async def all_expected() -> None:
            while [e.seq for e in seen] != expected:
                arrived.clear()
                await asyncio.wait_for(arrived.wait(), FOLLOW_WAIT)

        replica.subscribe(on_event, from_seq=0)
        for _ in range(3):
            await all_expected()
            expected += await asyncio.to_thread(lambda: writer.ask("turn")["ok"])
        await all_expected()
        assert seen == await store.read(session_id)
        assert list(await replica.read(0, replica.next_seq)) == seen

        late: list[int] = []
        async for event in replica.stream(from_seq=3):  # a late subscriber catches up from seq 3
            assert isinstance(event, Event)
            late.append(event.seq)
            if len(late) == len(seen) - 3:
                break
        assert late == [e.seq for e in seen[3:]]


async def test_follow_reads_from_a_seq_and_names_an_unknown_session(
    pg_cluster: Cluster, pg_schema: str, writer: Writer
) -> None:
    session_id = writer.ready["id"]
    async with PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as store:
        stream = store.follow(session_id, 2)
        first = await asyncio.wait_for(anext(stream), FOLLOW_WAIT)
        assert first.seq == 2
        await stream.aclose()
        with pytest.raises(Exception, match="nope"):
            await anext(store.follow("nope"))


async def test_a_replica_starts_caught_up_and_follows_again_after_losing_its_connection(
    pg_cluster: Cluster, pg_schema: str, writer: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engine.replica.RETRY_AFTER", 0.0)
    session_id = writer.ready["id"]
    async with (
        PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as store,
        followed_session(store, session_id) as followed,
    ):
        # the block starts with every event stored when it was entered (the open turn too)
        assert [e.seq for e in followed.held] == writer.ready["seqs"]
        arrived = asyncio.Event()
        followed.subscribe(lambda _: arrived.set())
        admin = await asyncpg.connect(pg_cluster.url, password=PASSWORD)
        try:  # the server ends the listening connection (a restart, an administrator)
            ended = await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE $1",
                f'LISTEN "trellis_events.{pg_schema}"%',
            )
        finally:
            await admin.close()
        assert ended == 1
        expected = [
            *writer.ready["seqs"],
            *await asyncio.to_thread(lambda: writer.ask("turn")["ok"]),
        ]
        while [e.seq for e in followed.held] != expected:
            arrived.clear()
            await asyncio.wait_for(arrived.wait(), FOLLOW_WAIT)
        assert list(followed.held) == await store.read(session_id)


async def test_a_follower_learns_when_the_writer_lets_go_and_when_another_takes_it(
    pg_cluster: Cluster, pg_schema: str, writer: Writer
) -> None:
    session_id = writer.ready["id"]
    async with (
        PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as store,
        PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as other,
    ):
        holders = store.writers(session_id)
        first = await asyncio.wait_for(anext(holders), FOLLOW_WAIT)
        assert first is not None
        assert f"(process {writer.ready['pid']} on " in first  # who writes it, at once
        change = asyncio.ensure_future(anext(holders))
        seqs = await asyncio.to_thread(lambda: writer.ask("turn")["ok"])
        followed = store.follow(session_id, seqs[-1])
        await asyncio.wait_for(anext(followed), FOLLOW_WAIT)
        await followed.aclose()
        assert not change.done()  # a flush, seen by a follower, changes no writer
        await asyncio.to_thread(lambda: writer.ask("release"))
        assert await asyncio.wait_for(change, FOLLOW_WAIT) is None  # it let go
        await other.load(session_id)  # another process takes it: followers are told who
        taken = await asyncio.wait_for(anext(holders), FOLLOW_WAIT)
        assert taken is not None
        assert f"(process {os.getpid()} on " in taken
        await other.release(session_id)
        assert await asyncio.wait_for(anext(holders), FOLLOW_WAIT) is None
        await holders.aclose()
        assert await anext(store.writers(session_id)) is None  # none now: said at once


async def test_a_follower_learns_when_a_stopped_writers_lease_expires(
    pg_cluster: Cluster, pg_schema: str
) -> None:
    writer = Writer(pg_cluster, pg_schema, ttl=1.0)
    try:
        os.kill(writer.ready["pid"], signal.SIGSTOP)  # it sends nothing: its lease runs out
        async with PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as store:
            holders = store.writers(writer.ready["id"])
            holder = await asyncio.wait_for(anext(holders), FOLLOW_WAIT)
            while holder is not None:  # held until its lease expires, then let go
                holder = await asyncio.wait_for(anext(holders), FOLLOW_WAIT)
            await holders.aclose()
            assert (await store.load(writer.ready["id"])).info.id == writer.ready["id"]
    finally:
        writer.end()
