"""Which events a session's state is built from, once rewinds took some out of its history.

A conversation rewind appended at seq R with `to_seq` S takes the seqs in [S, R) out of the
*effective history*: everything rebuilt from the log (the Context, the bound model, the mode, the
pins, the Areas) is built from the events outside every such interval; the rewind itself stays,
as a marker. Several rewinds take out the union of their intervals, and the union is exact:
a rewind is appended after every event there is, so removing [S, R) from a history H whose seqs
are all below R leaves {h in H : h < S}, H truncated at S, to which R and what follows append;
by induction the union of the intervals is the history of truncations and appends (property
tested in tests/test_rewind_intervals.py).

A few records must stay unique over the whole log, rewound or not: turn numbers, Area ids, pin
ids and grant epochs are never reused, and the tool definitions, floor blocks and standing
permission rules follow every event (DESIGN-NOTES, "Rewind").
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator

from engine.events import Event, SessionRewind


class RewoundIntervals:
    """The union of the rewinds' [to_seq, seq) intervals, disjoint and sorted."""

    __slots__ = ("_ends", "_starts")

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        for event in events:
            self.note(event)

    def __bool__(self) -> bool:
        return bool(self._starts)

    def __contains__(self, seq: int) -> bool:
        """Whether a rewind took the event at `seq` out of the history."""
        at = bisect_right(self._starts, seq) - 1
        return at >= 0 and seq < self._ends[at]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RewoundIntervals):
            return NotImplemented
        return self.intervals == other.intervals

    __hash__ = None  # type: ignore[assignment]  # mutable

    @property
    def intervals(self) -> tuple[tuple[int, int], ...]:
        """Each interval as (first seq taken out, the seq after the last)."""
        return tuple(zip(self._starts, self._ends, strict=True))

    def note(self, event: Event) -> bool:
        """Take in the interval of a conversation rewind (True), given in log order; any other
        event changes nothing (False)."""
        data = event.data
        if type(data) is not SessionRewind or not data.conversation:  # by exact class
            return False
        self.add(data.to_seq, event.seq)
        return True

    def add(self, start: int, end: int) -> None:
        """Take out [start, end); `end` is past every interval so far (a rewind's own seq)."""
        if self._ends and end < self._ends[-1]:
            raise ValueError(f"a rewind at seq {end} comes before one at seq {self._ends[-1]}")
        # The intervals that start at or after `start` are inside the new one; one that reaches
        # `start` merges with it.
        keep = bisect_right(self._starts, start - 1)
        del self._starts[keep:], self._ends[keep:]
        if self._ends and self._ends[-1] >= start:
            self._ends[-1] = end
        else:
            self._starts.append(start)
            self._ends.append(end)

    def copy(self) -> RewoundIntervals:
        twin = RewoundIntervals()
        twin._starts, twin._ends = list(self._starts), list(self._ends)
        return twin

    def effective(self, events: Iterable[Event]) -> Iterator[Event]:
        """The events of `events` that are in the effective history, in order."""
        if not self:
            yield from events
            return
        for event in events:
            if event.seq not in self:
                yield event
