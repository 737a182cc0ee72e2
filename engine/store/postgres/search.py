"""The PostgreSQL search index: `search_docs`, each indexed event's words as a `tsvector` under a
GIN index, ranked by `ts_rank`.

The words are split and folded here (`search_query.words_of`) and handed over joined by spaces,
so PostgreSQL's parser, which reads `app.py` as one host name, sees the same words as SQLite's
index does, and a query (`tsquery_text`) finds on both stores what it names. Two processes may
index the same session at once: a row already there is kept, and the count only moves forward.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.store.postgres.schema import Connection
from engine.store.search import SearchHit, hit_of
from engine.store.search_query import SearchQuery, tsquery_text, words_of
from engine.store.search_text import INDEXED_TYPES, indexed_text

_SESSIONS_PER_BATCH = 64


async def index_some(conn: Connection, session_ids: Sequence[str] | None, budget: int) -> int:
    """As `FtsIndex.index_some`, inside the caller's transaction."""
    if session_ids is None:
        waiting = await conn.fetch(
            "SELECT id, search_indexed, event_count FROM sessions "
            "WHERE search_indexed < event_count LIMIT $1",
            _SESSIONS_PER_BATCH,
        )
    else:
        waiting = await conn.fetch(
            "SELECT id, search_indexed, event_count FROM sessions "
            "WHERE id = ANY($1::text[]) AND search_indexed < event_count",
            list(session_ids),
        )
    done = 0
    for session_id, indexed, count in waiting:
        end = min(count, indexed + max(budget - done, 1))
        rows = await conn.fetch(
            "SELECT seq, type, data FROM events WHERE session_id = $1 AND seq >= $2 "
            "AND seq < $3 AND type = ANY($4::text[])",
            session_id,
            indexed,
            end,
            list(INDEXED_TYPES),
        )
        seqs: list[int] = []
        bodies: list[str] = []
        for seq, kind, data in rows:
            found = indexed_text(kind, data)
            if found is not None:
                seqs.append(seq)
                bodies.append(" ".join(words_of(found.text)))
        await conn.execute(
            "INSERT INTO search_docs (session_id, seq, words) "
            "SELECT $1, d.seq, to_tsvector('simple', d.body) "
            "FROM unnest($2::bigint[], $3::text[]) AS d(seq, body) ON CONFLICT DO NOTHING",
            session_id,
            seqs,
            bodies,
        )
        await conn.execute(
            "UPDATE sessions SET search_indexed = greatest(search_indexed, $2) WHERE id = $1",
            session_id,
            end,
        )
        done += end - indexed
        if done >= budget:
            break
    return done


async def search(
    conn: Connection, query: SearchQuery, *, cwd: str | None, limit: int, offset: int
) -> list[SearchHit]:
    """As `FtsIndex.search`."""
    scope = ""
    params: list[object] = [tsquery_text(query), limit, offset]
    if cwd is not None:
        scope = "JOIN sessions s ON s.id = d.session_id AND s.cwd = $4"
        params.append(cwd)
    rows = await conn.fetch(
        f"""WITH q AS (SELECT to_tsquery('simple', $1) AS q),
        top AS (
            SELECT d.session_id, d.seq, ts_rank(d.words, q.q) AS score
            FROM search_docs d CROSS JOIN q {scope}
            WHERE d.words @@ q.q ORDER BY score DESC, d.session_id, d.seq LIMIT $2 OFFSET $3
        )
        SELECT e.session_id, s.title, s.cwd, e.seq, e.time, e.type, e.data, -top.score,
            coalesce((SELECT (t.data::json ->> 'turn')::bigint FROM events t
                WHERE t.session_id = e.session_id AND t.type = 'turn/start' AND t.seq <= e.seq
                ORDER BY t.seq DESC LIMIT 1), 0)
        FROM top JOIN events e ON e.session_id = top.session_id AND e.seq = top.seq
        JOIN sessions s ON s.id = e.session_id
        ORDER BY top.score DESC, e.session_id, e.seq""",
        *params,
    )
    return [hit_of(tuple(row), query) for row in rows]
