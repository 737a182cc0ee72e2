"""`trellis replay ID` of a session another process writes, on PostgreSQL (issue 14): the replay
screen follows it. New events extend the position bar; paused or stepped back the position stays;
played at the end (live) it keeps up; the bar says who writes it, when the writer lets go, and who
takes it next."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from app.tui.following import follow_events
from app.tui.screens.replay import ReplayScreen
from app.tui.widgets.entries import UserMessage
from engine.events import Event
from engine.session import Session
from engine.store.postgres.schema import DEFAULT_SCHEMA
from engine.store.postgres.store import PostgresStore
from tests.pg_cluster import PASSWORD, Cluster
from tests.store.conftest import full_turn
from tests.store.test_pg_lease import Writer
from tests.store.test_store_copy import new_database
from tests.tui.test_followed_session import pg_settings
from tests.tui.test_replay import bar, opened, replay_app
from tests.waiting import until


def users(screen: ReplayScreen) -> list[str]:
    return [u.copy_text for u in screen.query(UserMessage)]


async def test_the_replay_follows_a_session_another_process_writes(
    pg_cluster: Cluster, workspace: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database, settings = await pg_settings(pg_cluster, monkeypatch)
    writer = Writer(pg_cluster, DEFAULT_SCHEMA, ttl=30.0, url=database)
    try:
        session_id = writer.ready["id"]
        stored = writer.ready["seqs"]  # a whole turn, then one the writer has open
        app = replay_app(workspace, data, session_id, settings)
        async with app.run_test(size=(150, 30)) as pilot:
            screen = await opened(pilot)
            await until(lambda: "following: " in bar(screen), "following", pilot=pilot)
            # the open turn is the writer's, not a crash: shown as written, not repaired
            assert [e.seq for e in screen.log_events] == stored
            assert f"following: pg_writer.py (process {writer.ready['pid']} on " in bar(screen)
            await pilot.press("right", "right")
            assert screen.player.position == 2

            more = (await asyncio.to_thread(writer.ask, "turn"))[
                "ok"
            ]  # paused: the end grows, the position stays
            total = len(stored) + len(more)
            await until(lambda: len(screen.log_events) == total, "every event shown", pilot=pilot)
            assert [e.seq for e in screen.log_events] == list(range(total))
            assert screen.player.position == 2
            assert f"seq 1/{total - 1} " in bar(screen)

            await pilot.press("end")  # to the end, live: each new event is played as it comes
            await until(lambda: screen.live, "live", pilot=pilot)
            assert "● live" in bar(screen)
            more = (await asyncio.to_thread(writer.ask, "turn"))["ok"]
            total += len(more)
            await until(lambda: screen.player.position == total, "at the end", pilot=pilot)
            assert screen.live
            await pilot.pause()
            assert users(screen).count("from the writer") == 2

            await asyncio.to_thread(writer.ask, "release")  # the writer lets go
            await until(
                lambda: "its writer let go" in bar(screen), "its writer let go", pilot=pilot
            )
            async with PostgresStore(database, password=PASSWORD) as other:
                await other.load(session_id)  # another process takes it: the bar names it
                await until(
                    lambda: f"(process {os.getpid()} on " in bar(screen),
                    "the bar names the process",
                    pilot=pilot,
                )
                assert "following: " in bar(screen)
        assert app.return_code in (None, 0)
    finally:
        writer.end()


async def test_a_crashed_writers_session_is_followed_from_its_computed_repair(
    pg_cluster: Cluster, workspace: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database, settings = await pg_settings(pg_cluster, monkeypatch)
    writer = Writer(pg_cluster, DEFAULT_SCHEMA, ttl=30.0, url=database)
    writer.end()  # killed with its turn open: its lease counts as gone at once on this host
    session_id = writer.ready["id"]
    app = replay_app(workspace, data, session_id, settings)
    async with app.run_test(size=(150, 30)) as pilot:
        screen = await opened(pilot)
        await until(
            lambda: "following: no one writes it now" in bar(screen),
            "no one writes it now",
            pilot=pilot,
        )
        shown = len(screen.log_events)
        assert shown > len(writer.ready["seqs"])  # the open turn closed by the computed repair
        assert screen.log_events[-1].type == "turn/end"
        async with PostgresStore(database, password=PASSWORD) as other:
            loaded = await other.load(session_id)  # writes that same repair
            assert [e.type for e in loaded.events] == [e.type for e in screen.log_events]
            session = Session(session_id, other, loaded.events)
            full_turn(session, "after the crash")
            await session.flush()
            stored = await other.read(session_id)
            await until(
                lambda: len(screen.log_events) == len(stored),
                "every stored event shown",
                pilot=pilot,
            )
            assert screen.log_events[shown:] == stored[shown:]
            assert f"(process {os.getpid()} on " in bar(screen)


async def test_following_a_deleted_session_ends_instead_of_retrying(pg_cluster: Cluster) -> None:
    async with PostgresStore(await new_database(pg_cluster), password=PASSWORD) as store:
        taken: list[Event] = []
        await asyncio.wait_for(follow_events(store, "gone", 0, taken.append), 60.0)
        assert taken == []
