"""A session's log as a sequence indexed by seq, of which only the held part can be read at once.

A stored session holds a tail of its log in memory (`Session.held`); the rest is in the store and
read by range (`Session.read`, `Agent.read_log`). This view keeps the shape callers expect of a
whole log (its length is the next seq, index and slice by seq) and refuses, loudly, to read an
event it does not hold, so no caller takes a tail for the whole log.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from engine.events import Event


class NotHeldError(LookupError):
    """Events before the held tail were asked for: they are read from the store (`read_log`)."""


class HeldLog(Sequence[Event]):
    """`held` (the events from seq `start` on) as the log from seq 0: `len` is the next seq."""

    __slots__ = ("_held", "_start")

    def __init__(self, held: Sequence[Event], start: int) -> None:
        self._held = held
        self._start = start

    def __len__(self) -> int:
        return self._start + len(self._held)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | Sequence[Event]:
        if isinstance(index, slice):
            first, stop, stride = index.indices(len(self))
            if stride != 1:
                raise ValueError("a log slice takes no step")
            if first < stop:
                self._check(first)
            return self._held[max(first - self._start, 0) : max(stop - self._start, 0)]
        seq = index + len(self) if index < 0 else index
        if not 0 <= seq < len(self):
            raise IndexError(f"no event with seq {index} in a log of {len(self)}")
        self._check(seq)
        return self._held[seq - self._start]

    def __iter__(self) -> Iterator[Event]:
        self._check(0)
        return iter(self._held)

    def _check(self, seq: int) -> None:
        if seq < self._start:
            raise NotHeldError(
                f"the events before seq {self._start} are not held in memory; "
                "read them from the store (Agent.read_log)"
            )
