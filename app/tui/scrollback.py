"""Scrollback: a stored session's earlier turns, read from the store a page at a time.

The console opens a long session at its end (`tail`) and projects only those turns; as the user
scrolls up, `Scrollback.older` reads the turns before what is shown with a range read and projects
them into a `Transcript` of their own, which the shown one takes in front (`Transcript.prepend`).
Pages are cut at a turn's start, so each turn lies wholly in one page.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.events import Event, TurnStart
from engine.store.base import SessionStore
from replay.transcript import Transcript, transcript_of

TAIL_TURNS = 10
"""Turns a resumed session first shows (a screenful, mostly; a view they do not fill loads more)."""
PAGE_TURNS = 20
"""Turns read per page of scrollback."""
EVENTS_PER_TURN = 16
"""A first guess of a turn's events, to size a page's range read (a longer turn reads on)."""


async def tail(store: SessionStore, session_id: str, turns: int = TAIL_TURNS) -> list[Event]:
    """The stored events of the last `turns` turns (a range read, not the whole log).

    An interrupted tail is left open: the Agent that loads the session writes its repair, and
    the console shows it as it arrives."""
    info = await store.info(session_id)
    events = await store.read_last_turns(session_id, turns)
    return [event for event in events if event.seq < info.event_count]


@dataclass(slots=True)
class Scrollback:
    """The events of `session_id` before seq `start`, still to be shown; none once `start` is 0."""

    store: SessionStore
    session_id: str
    start: int
    turns: int = PAGE_TURNS

    @property
    def exhausted(self) -> bool:
        return self.start <= 0

    async def older(self) -> Transcript:
        """The projection of up to `turns` turns before `start` (and what lies between them);
        `start` moves to the first event read. Empty once the session's start is shown."""
        span = self.turns * EVENTS_PER_TURN
        while not self.exhausted:
            first = max(self.start - span, 0)
            events = await self.store.read(self.session_id, first, self.start - 1)
            starts = [i for i, event in enumerate(events) if isinstance(event.data, TurnStart)]
            if first == 0:
                cut = 0 if len(starts) <= self.turns else starts[-self.turns]
            elif starts:
                cut = starts[max(len(starts) - self.turns, 0)]
            else:
                span *= 2  # one turn longer than the range: read further back
                continue
            page = events[cut:]
            self.start = page[0].seq if page else first
            return transcript_of(page)
        return Transcript()
