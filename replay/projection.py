"""The one contract every replay projection keeps, so the player can drive any of them.

A projection is a pure function of an event sequence that can also be fed one event at a time:
feeding events `0..n` with `apply` leaves it in the state a projection built from the same `n + 1`
events would have, whether the events come live from `Agent.subscribe` or from the store.
"""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

from engine.events import Event

S_co = TypeVar("S_co", covariant=True)


@runtime_checkable
class Projection(Protocol[S_co]):
    """`apply(event)` takes the next durable event in log order (what it returns is the
    projection's own: the transcript reports which entries changed); `snapshot()` returns what the
    projection shows after the events applied so far, as a value later events do not change."""

    def apply(self, event: Event) -> object: ...

    def snapshot(self) -> S_co: ...
