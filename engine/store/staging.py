"""What a writer has staged but not flushed: checked against the log, kept as ready-to-insert rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.events import Event, ModelBind, SessionTitle, encode_data
from engine.invariants import InvariantError, LogState
from engine.store.errors import SequenceError

Row = tuple[str, int, float, str, str]  # session_id, seq, time, type, data (JSON)


def rows_of(session_id: str, events: Sequence[Event]) -> list[Row]:
    return [(session_id, e.seq, e.time, e.type, encode_data(e)) for e in events]


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """Staged rows taken out for one flush, with what they change in the sessions table."""

    rows: list[Row]
    title: str | None
    model: str | None
    state: LogState  # the log's state once these rows are stored


@dataclass(slots=True)
class StagedLog:
    """A leased session's write position: how much is stored, and the batches staged after it."""

    session_id: str
    stored: int
    durable: LogState  # after the stored events
    state: LogState  # after the stored and the staged events
    rows: list[Row] = field(default_factory=list)
    title: str | None = None
    model: str | None = None

    @classmethod
    def at(cls, session_id: str, stored: int, state: LogState) -> StagedLog:
        return cls(session_id=session_id, stored=stored, durable=state, state=state.copy())

    def stage(self, events: Sequence[Event]) -> None:
        """Check and stage a batch; `SequenceError` (nothing staged) if it does not continue the
        log or breaks an invariant."""
        state = self.state.copy()
        rows: list[Row] = []
        session_id, title, model = self.session_id, self.title, self.model
        for event in events:
            # fields read from the instance dict: pydantic's `__getattr__` hook slows every
            # attribute read of a model, and a batch of 100 reads four of each event
            fields = event.__dict__
            seq, payload = fields["seq"], fields["data"]
            try:
                state.check_payload(seq, payload)
                data = encode_data(event)
            except (InvariantError, ValueError) as exc:
                raise SequenceError(f"session {session_id!r}: {exc}") from exc
            state.apply(event)
            rows.append((session_id, seq, fields["time"], fields["type"], data))
            # by exact class (see `Payload`): a class pattern cost more than the row
            kind = type(payload)
            if kind is SessionTitle:
                title = payload.title
            elif kind is ModelBind:
                model = payload.model
        self.state = state
        self.rows.extend(rows)
        self.title, self.model = title, model

    def take(self) -> Batch:
        """Move the staged rows into a batch to flush; later appends stage after them."""
        # `stage` and `discard` replace the state, never change it in place: it can be shared
        batch = Batch(rows=self.rows, title=self.title, model=self.model, state=self.state)
        self.rows, self.title, self.model = [], None, None
        return batch

    def stored_batch(self, batch: Batch) -> None:
        self.stored += len(batch.rows)
        self.durable = batch.state

    def discard(self) -> None:
        """Forget everything staged (the caller still has the events and stages them again)."""
        self.rows, self.title, self.model = [], None, None
        self.state = self.durable
