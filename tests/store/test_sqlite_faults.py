"""SQLiteStore under bad files, locks, failing batches and schema versions: clear errors, no loss."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path

import aiosqlite
import pytest

from engine.session import Session
from engine.store.errors import (
    DatabaseLockedError,
    NotADatabaseError,
    SchemaVersionError,
    StoreError,
    StoreUnavailableError,
)
from engine.store.sqlite import schema
from engine.store.sqlite.store import SQLiteStore
from tests.store.conftest import full_turn


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        yield conn


async def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    path.write_bytes(b"not a database at all\n" * 100)
    with pytest.raises(NotADatabaseError, match=str(path)):
        await SQLiteStore(path).open()


async def test_an_unwritable_directory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the directory should be")
    path = blocker / "data" / "sessions.sqlite"
    with pytest.raises(StoreUnavailableError, match=str(blocker / "data")):
        await SQLiteStore(path).open()


async def test_a_database_locked_at_open(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    with raw(path) as conn:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("CREATE TABLE other (x)")  # holds the exclusive lock from now on
        with pytest.raises(DatabaseLockedError, match=str(path)):
            await SQLiteStore(path, busy_timeout=0.05).open()


async def test_a_locked_flush_keeps_the_events_for_the_next_one(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    async with SQLiteStore(path, busy_timeout=0.05) as store:
        info = await store.create(cwd="/w")
        session = Session(info.id, store)
        full_turn(session)
        with raw(path) as conn:
            conn.execute("BEGIN IMMEDIATE")
            with pytest.raises(DatabaseLockedError, match=str(path)):
                await session.flush()
            conn.execute("ROLLBACK")
        assert session.pending == len(session.held)
        await session.flush()
        assert await store.read(info.id) == list(session.held)


async def test_a_failing_batch_leaves_no_partial_rows(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    async with SQLiteStore(path) as store:
        first = Session((await store.create(cwd="/w")).id, store)
        second = Session((await store.create(cwd="/w")).id, store)
        full_turn(first)
        full_turn(second)
        with raw(path) as conn:
            conn.execute(
                "CREATE TRIGGER fail BEFORE INSERT ON events "
                f"WHEN NEW.session_id = '{second.id}' AND NEW.seq = 5 "
                "BEGIN SELECT RAISE(ABORT, 'disk trouble'); END"
            )
        await store.append(first.id, first.held)
        await store.append(second.id, second.held)
        with pytest.raises(StoreError, match="disk trouble"):
            await store.flush()  # one transaction for both sessions
        for session in (first, second):
            assert await store.read(session.id) == []
            assert (await store.info(session.id)).event_count == 0
        await store.flush()  # the failed batches were discarded, not kept half-staged
        with raw(path) as conn:
            conn.execute("DROP TRIGGER fail")
        await first.flush()
        await second.flush()
        assert await store.read(second.id) == list(second.held)


async def test_an_unknown_event_type_is_named_with_its_seq(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    async with SQLiteStore(path) as store:
        session = Session((await store.create(cwd="/w")).id, store)
        full_turn(session)
        await session.flush()
        with raw(path) as conn:
            conn.execute("UPDATE events SET type = 'from/future' WHERE seq = 3")
        with pytest.raises(StoreError, match=r"'from/future' at seq 3"):
            await store.inspect(session.id)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ('{"turn": 1', "Invalid JSON"),  # cut short
        ('{"turn": "one"}', "valid integer"),
        ('{"turn": 1, "mood": "odd"}', "Extra inputs"),
        ("[1]", "should be an object"),
    ],
)
async def test_a_malformed_row_is_named_with_its_seq_and_loses_nothing(
    tmp_path: Path, data: str, why: str
) -> None:
    path = tmp_path / "sessions.sqlite"
    async with SQLiteStore(path) as store:
        session = Session((await store.create(cwd="/w")).id, store)
        full_turn(session)
        await session.flush()
        await store.release(session.id)
        with raw(path) as conn:
            good = conn.execute("SELECT data FROM events WHERE seq = 0").fetchone()[0]
            conn.execute("UPDATE events SET data = ? WHERE seq = 0", (data,))
        where = re.escape(f"{path}: session '{session.id}'")
        refused = rf"(?s){where}: invalid turn/start event at seq 0:.*{why}"
        for view in (store.inspect, store.load, store.read):
            with pytest.raises(StoreError, match=refused):
                await view(session.id)
        # a refused load takes no lease and writes no repair: mended, the log reads whole
        with raw(path) as conn:
            conn.execute("UPDATE events SET data = ? WHERE seq = 0", (good,))
        assert len((await store.load(session.id)).events) == len(session.held)


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    async with SQLiteStore(path):
        pass
    with raw(path) as conn:
        conn.execute("UPDATE meta SET schema_version = 99")
    with pytest.raises(SchemaVersionError, match=rf"{path}.*99"):
        await SQLiteStore(path).open()


async def test_migrations_run_once_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sessions.sqlite"
    async with SQLiteStore(path) as store:
        kept = await store.create(cwd="/w", title="old")
    ran: list[int] = []

    async def add_column(conn: aiosqlite.Connection) -> None:
        ran.append(1)
        await conn.execute("ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")

    async def broken(conn: aiosqlite.Connection) -> None:
        await conn.execute("ALTER TABLE sessions ADD COLUMN half INTEGER")
        raise RuntimeError("step failed")

    current = schema.schema_version()
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, add_column, broken))
    step = f"from schema version {current + 1} to {current + 2} failed: step failed"
    with pytest.raises(SchemaVersionError, match=step):
        await SQLiteStore(path).open()
    with raw(path) as conn:  # the failed open rolled back the whole migration
        assert conn.execute("SELECT schema_version FROM meta").fetchall() == [(current,)]
        columns = [row[1] for row in conn.execute("PRAGMA table_info(sessions)")]
        assert "pinned" not in columns
        assert "half" not in columns

    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS[:-1],))
    for _ in range(2):
        async with SQLiteStore(path) as store:
            assert (await store.info(kept.id)).title == "old"
    assert ran == [1, 1]  # once in the failed open (rolled back), once for real
    with raw(path) as conn:
        assert conn.execute("SELECT schema_version FROM meta").fetchall() == [(current + 1,)]


async def written_at_version(
    path: Path, monkeypatch: pytest.MonkeyPatch, version: int, cwds: Sequence[str], turns: int
) -> list[str]:
    """Sessions in `cwds` of `turns` full turns each, written by the code of schema `version`."""
    ids: list[str] = []
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:version])
        async with SQLiteStore(path) as store:
            for cwd in cwds:
                session = Session((await store.create(cwd=cwd)).id, store)
                for _ in range(turns):
                    full_turn(session)
                await session.flush()
                ids.append(session.id)
    return ids


async def test_a_version_1_database_gains_the_turn_index_and_counts_its_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sessions.sqlite"
    [session_id] = await written_at_version(path, monkeypatch, 1, ["/w"], turns=2)
    async with SQLiteStore(path) as store:
        assert (await store.info(session_id)).turns == 2
    with raw(path) as conn:
        assert conn.execute("SELECT schema_version FROM meta").fetchall() == [
            (schema.schema_version(),)
        ]
        indexes = [row[1] for row in conn.execute("PRAGMA index_list(events)")]
        assert "events_turn_starts" in indexes


async def test_a_version_2_database_drops_the_indexes_a_flush_kept_moving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every flush moves `updated`; no index over it is kept, and listings stay as they were."""
    path = tmp_path / "sessions.sqlite"
    await written_at_version(path, monkeypatch, 2, ["/a", "/b", "/a"], turns=1)
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:2])
        async with SQLiteStore(path) as store:
            before = [await store.list(), await store.list(cwd="/a", limit=1)]
    with raw(path) as conn:
        indexes = {row[1] for row in conn.execute("PRAGMA index_list(sessions)")}
        assert {"sessions_by_updated", "sessions_by_cwd"} <= indexes
    async with SQLiteStore(path) as store:
        assert [await store.list(), await store.list(cwd="/a", limit=1)] == before
        assert [s.cwd for s in before[0].sessions] == ["/a", "/b", "/a"][::-1]
    with raw(path) as conn:
        assert conn.execute("SELECT schema_version FROM meta").fetchall() == [
            (schema.schema_version(),)
        ]
        indexes = {row[1] for row in conn.execute("PRAGMA index_list(sessions)")}
        assert not {"sessions_by_updated", "sessions_by_cwd"} & indexes


async def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "sessions.sqlite")
    with pytest.raises(StoreError, match="not open"):
        await store.info("x")
