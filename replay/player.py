"""Plays a stored log into any projection: at the original pace, at a speed factor, or stepwise.

The player owns a position in the log (how many events have been played). Forward it feeds the
next event to the projection's `apply`. Backward it asks a projection that can seek (`Seekable`,
such as the timeline, which seeks through its checkpoints) for the state at the earlier seq; any
other projection is rebuilt from a fresh one and the events before the new position.
Pacing follows the events' recorded times, each idle gap capped at `max_gap` seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, Protocol, TypeVar, cast, runtime_checkable

from engine.events import Event
from replay.projection import Projection

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)

MAX_IDLE_GAP = 2.0
"""Seconds: a longer pause in the recorded session is played as this long."""


@runtime_checkable
class Seekable(Protocol[S_co]):
    """A projection that can give its state as of any seq it has applied (the timeline)."""

    @property
    def seq(self) -> int: ...

    def apply(self, event: Event) -> None: ...

    def at(self, seq: int) -> S_co: ...


class Player(Generic[S]):
    """Feeds `events` (one session's log, in order) to the projection `make()` returns."""

    def __init__(
        self,
        events: Sequence[Event],
        make: Callable[[], Projection[S]],
        *,
        max_gap: float = MAX_IDLE_GAP,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if max_gap < 0:
            raise ValueError(f"max_gap must be 0 or more, got {max_gap}")
        self._events = events
        self._make = make
        self._projection = make()
        # asked once: an isinstance check against a runtime-checkable Protocol inspects its
        # members each time, which a step back in a long session would pay again and again
        self._seekable = isinstance(self._projection, Seekable)
        self._position = 0  # events played
        self._max_gap = max_gap
        self._sleep = sleep
        self._paused = False

    @property
    def projection(self) -> Projection[S]:
        return self._projection

    @property
    def position(self) -> int:
        """How many events have been played (0 to `len(events)`)."""
        return self._position

    @property
    def seq(self) -> int:
        """The seq of the last event played (-1 before the first)."""
        return self._events[self._position - 1].seq if self._position else -1

    @property
    def at_end(self) -> bool:
        return self._position >= len(self._events)

    def state(self) -> S:
        """The projection's state at the current position."""
        projection = self._projection
        if self._seekable:
            state: S = cast("Seekable[S]", projection).at(self.seq)
            return state
        return projection.snapshot()

    # --- stepping ------------------------------------------------------------------------------

    def step_forward(self) -> Event | None:
        """Play the next event; None at the end."""
        if self.at_end:
            return None
        event = self._events[self._position]
        self._position += 1
        projection = self._projection
        if not self._seekable or cast("Seekable[S]", projection).seq < event.seq:
            projection.apply(event)
        return event

    def step_back(self) -> None:
        """Go back one event (nothing before the first)."""
        self.seek(max(self._position - 1, 0))

    def seek(self, position: int) -> None:
        """Go to `position` events played, forward or backward."""
        if not 0 <= position <= len(self._events):
            raise IndexError(f"position {position} is outside 0..{len(self._events)}")
        if position < self._position and not self._seekable:
            self._projection = self._make()
            self._position = 0
        if self._seekable and position <= self._position:
            self._position = position  # the projection already holds these events
            return
        while self._position < position:
            self.step_forward()

    # --- playing -------------------------------------------------------------------------------

    def pause(self) -> None:
        """Stop a running `play` after the event it is waiting for."""
        self._paused = True

    async def play(self, speed: float = 1.0, *, until: int | None = None) -> None:
        """Play to the end (or to `until` events played) at `speed` times the original pace;
        `speed=float("inf")` plays without waiting."""
        if speed <= 0:
            raise ValueError(f"speed must be above 0, got {speed}")
        end = len(self._events) if until is None else min(until, len(self._events))
        self._paused = False
        while self._position < end and not self._paused:
            if self._position > 0:
                gap = self._events[self._position].time - self._events[self._position - 1].time
                delay = min(max(gap, 0.0), self._max_gap) / speed
                if delay > 0:
                    await self._sleep(delay)
                if self._paused:
                    break
            self.step_forward()
