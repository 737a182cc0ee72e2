"""Scrollback: what the console can show of a session, stored pages read by range, then the live end.

The console opens a long session at its end (`tail`) and projects only those turns into the live
`Transcript`, which the screen feeds the Agent's events. The turns before it are read from the store
a page at a time (`older`, `newer`, `first`), each page projected into a `Transcript` of its own and
cut at a turn's start, so each turn, with its tool cards and results, lies wholly in one page and
the pages read in a row as the whole log projected at once. Only the pages around what the view
mounts stay in memory (`keep_around`); a page dropped is read again when the user comes back to it.
The live transcript is never dropped: the Agent's events change its last entries.
"""

from __future__ import annotations

from engine.events import Event, TurnStart
from engine.store.base import SessionStore
from replay.transcript import Transcript, TranscriptEntry, transcript_of

TAIL_TURNS = 10
"""Turns a resumed session first shows (a screenful, mostly; a view they do not fill loads more)."""
PAGE_TURNS = 20
"""Turns read per page of scrollback."""
EVENTS_PER_TURN = 16
"""A first guess of a turn's events, to size a page's range read (a longer turn reads on)."""
SPARE_PAGES = 1
"""Pages kept beyond either end of what the view mounts (read ahead of the user's scrolling)."""


async def tail(store: SessionStore, session_id: str, turns: int = TAIL_TURNS) -> list[Event]:
    """The stored events of the last `turns` turns (a range read, not the whole log).

    An interrupted tail is left open: the Agent that loads the session writes its repair, and
    the console shows it as it arrives."""
    info = await store.info(session_id)
    events = await store.read_last_turns(session_id, turns)
    return [event for event in events if event.seq < info.event_count]


class Scrollback:
    """The entries in reach of the view, in reading order: the stored pages held (contiguous,
    before seq `end`), then the live transcript once the pages reach it (`joined`).

    Positions (`index`, `between`, `count`) are over what is held, so they shift when a page is
    read or dropped at the front; a view keeps entry keys, not positions."""

    def __init__(
        self,
        live: Transcript,
        store: SessionStore | None = None,
        session_id: str = "",
        *,
        end: int = 0,
        turns: int = PAGE_TURNS,
    ) -> None:
        self.live = live
        self.store = store
        self.session_id = session_id
        self.end = end  # the seq the live transcript starts at: the stored pages lie before it
        self.turns = turns
        self.pages: list[Transcript] = []

    # --- the entries held ----------------------------------------------------------------------

    @property
    def joined(self) -> bool:
        """The pages reach the live transcript (or none is held): its entries follow theirs."""
        return not self.pages or self.pages[-1].last_seq + 1 >= self.end

    @property
    def parts(self) -> list[Transcript]:
        return [*self.pages, self.live] if self.joined else list(self.pages)

    @property
    def at_session_start(self) -> bool:
        """The session's first event is held (nothing older to read)."""
        return (self.pages[0].first_seq if self.pages else self.end) in (0, None)

    @property
    def count(self) -> int:
        return sum(part.count for part in self.parts)

    def between(self, start: int, stop: int) -> list[TranscriptEntry]:
        """The entries at positions `start` to `stop` of what is held."""
        found: list[TranscriptEntry] = []
        offset = 0
        for part in self.parts:
            if offset >= stop:
                break
            found += part.between(max(start - offset, 0), stop - offset)
            offset += part.count
        return found

    def index(self, key: str) -> int:
        """Where the entry with `key` stands among those held; `KeyError` for one not held."""
        offset = 0
        for part in self.parts:
            if part.get(key) is not None:
                return offset + part.index(key)
            offset += part.count
        raise KeyError(key)

    def get(self, key: str) -> TranscriptEntry | None:
        for part in self.parts:
            entry = part.get(key)
            if entry is not None:
                return entry
        return None

    @property
    def entries(self) -> list[TranscriptEntry]:
        return [entry for part in self.parts for entry in part.entries]

    # --- moving through the stored pages -------------------------------------------------------

    async def older(self) -> int:
        """Read the page before the first held (up to `turns` turns, cut at a turn's start);
        returns how many entries it put in front (0 at the session's start)."""
        if self.store is None or self.at_session_start:
            return 0
        before = self.pages[0].first_seq if self.pages else self.end
        assert before is not None  # not at the session's start
        span = self.turns * EVENTS_PER_TURN
        while True:
            first = max(before - span, 0)
            events = await self.store.read(self.session_id, first, before - 1)
            starts = [i for i, event in enumerate(events) if isinstance(event.data, TurnStart)]
            if first == 0:
                cut = 0 if len(starts) <= self.turns else starts[-self.turns]
            elif starts:
                cut = starts[max(len(starts) - self.turns, 0)]
            else:
                span *= 2  # one turn longer than the range: read further back
                continue
            page = transcript_of(events[cut:])
            self.pages.insert(0, page)
            return page.count

    async def newer(self) -> int:
        """Read the page after the last held, up to the live transcript; returns how many entries
        it put at the end (0 once the pages reach the live transcript)."""
        if self.store is None or self.joined:
            return 0
        after = self.pages[-1].last_seq + 1
        page = await self._forward(after)
        self.pages.append(page)
        return page.count

    async def first(self) -> None:
        """Hold only the session's first page (the user went to the start)."""
        if self.store is None or self.end <= 0:
            self.pages = []
            return
        self.pages = [await self._forward(0)]

    def last(self) -> None:
        """Hold only the live transcript (the user went to the end)."""
        self.pages = []

    async def _forward(self, start: int) -> Transcript:
        """The projection of up to `turns` turns from seq `start` (a turn's start), ending before
        the next turn's start or at `end`."""
        assert self.store is not None
        span = self.turns * EVENTS_PER_TURN
        while True:
            last = min(start + span, self.end) - 1
            events = await self.store.read(self.session_id, start, last)
            starts = [i for i, event in enumerate(events) if isinstance(event.data, TurnStart)]
            later = [i for i in starts if i > 0]
            if len(later) >= self.turns:
                return transcript_of(events[: later[self.turns - 1]])
            if last >= self.end - 1:
                return transcript_of(events)
            span *= 2  # fewer turns than asked in the range: read further on

    def keep_around(self, first_key: str, last_key: str, spare: int = SPARE_PAGES) -> None:
        """Drop the pages more than `spare` pages beyond those holding `first_key` and
        `last_key` (the view's first and last mounted entries): memory stays bounded both ways,
        and a dropped page is read again when the user comes back to it."""
        holding = [
            i
            for i, page in enumerate(self.pages)
            if page.get(first_key) is not None or page.get(last_key) is not None
        ]
        if self.live.get(last_key) is not None:
            holding.append(len(self.pages))  # the view reaches the live transcript
        if not holding:
            return
        low, high = max(min(holding) - spare, 0), max(holding) + spare + 1
        self.pages = self.pages[low:high]
