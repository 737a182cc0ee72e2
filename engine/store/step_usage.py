"""The rows `trellis stats` sums, read in SQL that SQLite and PostgreSQL both take (the shared
`Fetch` of `engine.store.queries`). Imports no event model: the rows are summed from their JSON.

A fork holds a copy of its parent's events before `fork_seq`: those steps are the parent's, so
they are read once, from the parent. Every `model/bind` is read (a fork's inherited one names the
model its own first steps ran on); steps only from `since` on.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.store.queries import Fetch

_ROWS = (
    "SELECT e.session_id, s.model, e.time, e.type, e.data FROM events e "
    "JOIN sessions s ON s.id = e.session_id "
    "WHERE e.type = 'model/bind' "
    "OR (e.type = 'step/end' AND e.time >= ? AND (s.fork_seq IS NULL OR e.seq >= s.fork_seq)) "
    "ORDER BY e.session_id, e.seq"
)


@dataclass(frozen=True, slots=True)
class StepRow:
    """A `step/end` (`data`, its JSON text) or a `model/bind` of a session, in log order;
    `session_model` is the session's current model, for steps before any binding."""

    session_id: str
    session_model: str
    time: float
    type: str
    data: str


async def step_rows(fetch: Fetch, since: float | None) -> tuple[StepRow, ...]:
    """Every session's bindings and its own steps at or after `since` (None: all)."""
    rows = await fetch(_ROWS, (0.0 if since is None else since,))  # times are epoch seconds
    return tuple(StepRow(str(r[0]), str(r[1]), float(r[2]), str(r[3]), str(r[4])) for r in rows)
