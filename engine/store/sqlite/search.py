"""The SQLite search index: an FTS5 table without content, keyed by the event's rowid.

The log already holds every text, so the index keeps none (`content=''`): only the words. Such a
table cannot be told to delete a row by its rowid alone before SQLite 3.43 (`contentless_delete`):
until then deleting a session hands FTS5 each indexed text again, computed from the rows being
deleted exactly as it was when they were indexed (`search_text`). Which of the two a table is
follows from how it was created, and is read back at every open (`FtsIndex.open`): a table made
by a newer SQLite than this one can use is left alone and search says why.

Each session's `search_indexed` counts its events the index has seen (they are indexed in seq
order, after the flush that stored them), so a fork, a copy or a store from before the index
starts at 0 and is caught up by the same batches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import aiosqlite

from engine.store.search import SearchHit, hit_of
from engine.store.search_query import SearchQuery, fts5_match
from engine.store.search_text import INDEXED_TYPES, docs_of

CONTENTLESS_DELETE = (3, 43, 0)
"""The SQLite release whose FTS5 deletes a row of a table without content by its rowid."""

_TYPES = ", ".join(f"'{t}'" for t in INDEXED_TYPES)
_TOKENIZE = "tokenize = 'unicode61 remove_diacritics 2'"
_SESSIONS_PER_BATCH = 64
RANKED_AT_MOST = 10_000
"""Matches a search ranks at most: of a query matching more (a word in most events), the newest
this many. Ranking costs time per match, and a word that common ranks nothing apart anyway;
this bounds a search's time however common the word (tests/bench/search.py)."""


@dataclass(frozen=True, slots=True)
class FtsIndex:
    """The index as this process can use it: `unusable` says why not (None: usable)."""

    contentless_delete: bool
    unusable: str | None = None

    @classmethod
    async def open(
        cls, conn: aiosqlite.Connection, version: tuple[int, int, int] = sqlite3.sqlite_version_info
    ) -> FtsIndex:
        """Read back the table (creating it if missing) inside the opening write transaction."""
        rows = list(
            await conn.execute_fetchall(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'search_fts'"
            )
        )
        shown = ".".join(map(str, version))
        if rows:
            has_delete = "contentless_delete" in str(rows[0][0]).lower()
            if has_delete and version < CONTENTLESS_DELETE:
                return cls(
                    contentless_delete=True,
                    unusable=f"its search index was made by SQLite 3.43 or newer "
                    f"(contentless_delete); this Python's SQLite is {shown}",
                )
            return cls(contentless_delete=has_delete)
        has_delete = version >= CONTENTLESS_DELETE
        option = ", contentless_delete = 1" if has_delete else ""
        try:
            await conn.execute(
                f"CREATE VIRTUAL TABLE search_fts USING fts5(body, content = ''{option}, {_TOKENIZE})"
            )
        except sqlite3.OperationalError as exc:
            # a build without FTS5: the store works, search says why it cannot
            return cls(
                contentless_delete=False,
                unusable=f"this Python's SQLite ({shown}) cannot make a search index: {exc}",
            )
        return cls(contentless_delete=has_delete)

    # --- writing (on the writer's thread, inside its transaction) ------------------------------

    def index_some(
        self, conn: sqlite3.Connection, session_ids: Sequence[str] | None, budget: int
    ) -> int:
        """Index up to about `budget` events not yet indexed (of `session_ids`, or of every
        session), in seq order; returns how many events were covered (0: none were waiting)."""
        if session_ids is None:
            waiting = conn.execute(
                "SELECT id, search_indexed, event_count FROM sessions "
                "WHERE search_indexed < event_count LIMIT ?",
                (_SESSIONS_PER_BATCH,),
            ).fetchall()
        else:
            marks = ", ".join("?" * len(session_ids))
            waiting = conn.execute(
                "SELECT id, search_indexed, event_count FROM sessions "
                f"WHERE id IN ({marks}) AND search_indexed < event_count",
                tuple(session_ids),
            ).fetchall()
        done = 0
        for session_id, indexed, count in waiting:
            end = min(count, indexed + max(budget - done, 1))
            rows = conn.execute(
                "SELECT rowid, type, data FROM events WHERE session_id = ? AND seq >= ? "
                f"AND seq < ? AND type IN ({_TYPES})",
                (session_id, indexed, end),
            ).fetchall()
            conn.executemany("INSERT INTO search_fts (rowid, body) VALUES (?, ?)", docs_of(rows))
            conn.execute("UPDATE sessions SET search_indexed = ? WHERE id = ?", (end, session_id))
            done += end - indexed
            if done >= budget:
                break
        return done

    async def forget(self, conn: aiosqlite.Connection, session_id: str) -> None:
        """Take a session's events out of the index, before they are deleted (same
        transaction)."""
        if self.unusable is not None:
            return  # the events go; a search that finds a rowid without its event skips it
        if self.contentless_delete:
            await conn.execute(
                "DELETE FROM search_fts WHERE rowid IN "
                "(SELECT rowid FROM events WHERE session_id = ?)",
                (session_id,),
            )
            return
        rows = await conn.execute_fetchall(
            f"SELECT rowid, type, data FROM events WHERE session_id = ? AND type IN ({_TYPES}) "
            "AND seq < (SELECT search_indexed FROM sessions WHERE id = ?)",
            (session_id, session_id),
        )
        await conn.executemany(
            "INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', ?, ?)",
            docs_of(list(rows)),
        )

    # --- reading --------------------------------------------------------------------------------

    async def search(
        self,
        conn: aiosqlite.Connection,
        query: SearchQuery,
        *,
        cwd: str | None,
        limit: int,
        offset: int,
    ) -> list[SearchHit]:
        """The best `limit` hits after `offset`, best first: ranked by the index alone, then
        only those rows read from the log."""
        match = fts5_match(query)
        scope = where = ""
        params: list[object] = [match]
        newest = await self._newest(conn, match)
        if newest is not None:
            where = "AND f.rowid >= ?"
            params.append(newest)
        if cwd is not None:
            scope = "JOIN events e ON e.rowid = f.rowid JOIN sessions s ON s.id = e.session_id"
            where += " AND s.cwd = ?"
            params.append(cwd)
        params += [limit, offset]
        rows = await conn.execute_fetchall(
            f"""WITH top AS (
                SELECT f.rowid AS rid, f.rank AS score FROM search_fts f {scope}
                WHERE search_fts MATCH ? {where} ORDER BY f.rank LIMIT ? OFFSET ?
            )
            SELECT e.session_id, s.title, s.cwd, e.seq, e.time, e.type, e.data, top.score,
                coalesce((SELECT json_extract(t.data, '$.turn') FROM events t
                    WHERE t.session_id = e.session_id AND t.type = 'turn/start'
                    AND t.seq <= e.seq ORDER BY t.seq DESC LIMIT 1), 0)
            FROM top JOIN events e ON e.rowid = top.rid JOIN sessions s ON s.id = e.session_id
            ORDER BY top.score""",
            tuple(params),
        )
        return [hit_of(row, query) for row in rows]

    @staticmethod
    async def _newest(conn: aiosqlite.Connection, match: str) -> int | None:
        """The lowest rowid of the newest `RANKED_AT_MOST` matches, if more match (counting
        them costs a fraction of ranking them: the index's doclists alone)."""
        rows = list(
            await conn.execute_fetchall(
                "SELECT rowid FROM search_fts WHERE search_fts MATCH ? "
                "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (match, RANKED_AT_MOST - 1),
            )
        )
        return int(rows[0][0]) if rows else None
