"""One writer per session across processes on PostgreSQL: a live holder keeps a second writer
out, a paused holder whose heartbeat went stale is taken over and fenced off (it can never write
again), and a writer killed with `kill -9` is taken over with everything it flushed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.events import TurnEnd
from engine.session import Session
from engine.store.errors import LeaseError
from engine.store.postgres.store import PostgresStore
from tests.pg_cluster import PASSWORD, PASSWORD_ENV, Cluster
from tests.store.conftest import full_turn

REPO = Path(__file__).resolve().parents[2]
TAKEOVER_WAIT = 60.0
"""Seconds to keep trying a takeover before the test gives up (a hung run, not a speed check)."""


class Writer:
    """`tests.store.pg_writer` in a process of its own, on the cluster (or the database `url`
    names in it)."""

    def __init__(
        self, cluster: Cluster, schema: str, ttl: float, *, url: str | None = None
    ) -> None:
        env = {**os.environ, PASSWORD_ENV: PASSWORD, "PYTHONPATH": str(REPO)}
        target = url or cluster.url
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.store.pg_writer", target, schema, str(ttl)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )
        self.ready = self.read()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the writer died"
        result: dict[str, Any] = json.loads(line)
        return result

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.read()

    def end(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def writers() -> Iterator[list[Writer]]:
    started: list[Writer] = []
    yield started
    for writer in started:
        writer.end()


async def take_over(store: PostgresStore, session_id: str) -> Session:
    """Load the session once its holder's lease allows it (LeaseError until then)."""
    deadline = time.monotonic() + TAKEOVER_WAIT
    while True:
        try:
            loaded = await store.load(session_id)
            return Session(session_id, store, loaded.events)
        except LeaseError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def test_a_paused_holder_is_taken_over_and_can_never_write_again(
    pg_cluster: Cluster, pg_schema: str, writers: list[Writer]
) -> None:
    writer = Writer(pg_cluster, pg_schema, ttl=1.0)
    writers.append(writer)
    session_id, pid = writer.ready["id"], writer.ready["pid"]
    async with PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as store:
        with pytest.raises(LeaseError, match=rf"{session_id}.*process {pid}"):
            await store.load(session_id)  # a live holder with a fresh heartbeat
        assert writer.ask("turn")["ok"]  # it still writes
        written = len((await store.inspect(session_id)).events) - 1  # minus the computed repair

        os.kill(pid, signal.SIGSTOP)
        mine = await take_over(store, session_id)
        mine_log = list(await mine.read(0, mine.next_seq))
        assert [e.seq for e in mine_log[:written]] == list(range(written))
        assert isinstance(mine_log[-1].data, TurnEnd)  # its open turn, repaired

        os.kill(pid, signal.SIGCONT)  # it wakes up and flushes where the log still ends for it
        refused = writer.ask("turn")
        assert "lost its writer lease" in refused["error"]
        assert f"process {os.getpid()}" in refused["error"]
        full_turn(mine, "from the new holder")
        await mine.flush()
        stored = await store.read(session_id)
        assert stored == list(
            await mine.read(0, mine.next_seq)
        )  # nothing of the paused holder after the takeover


async def test_a_killed_writer_is_taken_over_with_everything_it_flushed(
    pg_cluster: Cluster, pg_schema: str, writers: list[Writer]
) -> None:
    writer = Writer(pg_cluster, pg_schema, ttl=3600.0)  # its lease would outlive the test
    writers.append(writer)
    session_id = writer.ready["id"]
    flushed = writer.ready["seqs"] + writer.ask("turn")["ok"]
    writer.ask("stage")  # staged, never flushed: the kill loses it
    writer.proc.kill()  # SIGKILL
    writer.proc.wait()
    async with PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as store:
        loaded = await store.load(session_id)  # its process is gone: taken over at once
    assert [e.seq for e in loaded.events] == flushed
    assert loaded.repaired == ()  # it stopped between turns


async def test_a_running_holder_keeps_its_lease_past_its_time_to_live(
    pg_cluster: Cluster, pg_schema: str
) -> None:
    """The heartbeat renews the lease while its holder runs, flushing or not."""
    async with (
        PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema, lease_ttl=0.5) as holder,
        PostgresStore(pg_cluster.url, password=PASSWORD, schema=pg_schema) as other,
    ):
        info = await holder.create(cwd="/w")
        await asyncio.sleep(1.5)  # three times its time to live, without a flush
        with pytest.raises(LeaseError, match=r"being written by .*heartbeat"):
            await other.load(info.id)
