"""The SQLite index's start-up check: which FTS5 table this SQLite makes and can use, and a store
whose index this SQLite cannot use still storing, deleting and saying why it cannot search."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite
import pytest

from engine.session import Session
from engine.store.errors import SearchUnavailableError
from engine.store.sqlite.search import CONTENTLESS_DELETE, FtsIndex
from engine.store.sqlite.store import SQLiteStore
from tests.store.conftest import full_turn

OLD = (3, 40, 1)
NEW = (3, 45, 0)


async def test_an_older_sqlite_makes_a_table_deleted_by_its_texts(tmp_path: Path) -> None:
    async with aiosqlite.connect(tmp_path / "a.sqlite") as conn:
        index = await FtsIndex.open(conn, OLD)
        assert (index.contentless_delete, index.unusable) == (False, None)
        (sql,) = await conn.execute_fetchall(
            "SELECT sql FROM sqlite_master WHERE name = 'search_fts'"
        )
        assert "contentless_delete" not in sql[0]
        # read back by a newer SQLite: still the table it is, deleted by its texts
        again = await FtsIndex.open(conn, NEW)
        assert (again.contentless_delete, again.unusable) == (False, None)


@pytest.mark.skipif(
    sqlite3.sqlite_version_info >= CONTENTLESS_DELETE, reason="this SQLite has contentless_delete"
)
async def test_a_table_of_a_newer_sqlite_is_left_alone_and_search_says_why(tmp_path: Path) -> None:
    """A store whose index a newer SQLite made (stood for by a table declaring the option this
    one lacks): sessions are stored, found by id and deleted; only search refuses, naming both
    versions."""
    path = tmp_path / "data" / "sessions.sqlite"
    async with SQLiteStore(path):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE search_fts")
        conn.execute("CREATE TABLE search_fts (body, contentless_delete)")
    async with aiosqlite.connect(path) as conn:
        assert (await FtsIndex.open(conn, NEW)).unusable is None
        read = await FtsIndex.open(conn)
    assert read.contentless_delete
    assert read.unusable is not None
    assert "3.43" in read.unusable
    assert sqlite3.sqlite_version in read.unusable
    async with SQLiteStore(path) as store:
        info = await store.create(cwd="/w")
        session = Session(info.id, store)
        full_turn(session, "stored all the same")
        await session.flush()
        with pytest.raises(SearchUnavailableError, match=r"3\.43"):
            await store.search("stored")
        with pytest.raises(SearchUnavailableError):
            await store.update_index()
        await store.delete(info.id)
        assert (await store.list()).sessions == ()
