"""What `Agent.send()` returns: a handle that says what became of the input.

A send is blocked by admission (nothing appended), dropped (the agent was disposed before it ran, or
its turn could not open), or it runs as one turn whose number and end reason the handle reports.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Literal

from engine.events import TurnEndReason


@dataclass(frozen=True, slots=True)
class Blocked:
    """A prompt listener refused the prompt; no turn opened and nothing was appended."""

    reason: str


@dataclass(frozen=True, slots=True)
class Dropped:
    """The send never became a turn: the agent was disposed first, or the turn could not open."""

    reason: str


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """The send ran as turn `turn`, which ended with `reason` (its `turn/end`)."""

    turn: int
    reason: TurnEndReason
    message: str = ""


SendOutcome = Blocked | Dropped | TurnOutcome
SendState = Literal["queued", "admitting", "running", "done"]


class SendHandle:
    """Await it for the `SendOutcome`; `turn()` waits only until the turn has a number."""

    def __init__(self, position: int) -> None:
        self.position = position
        """How many sends were ahead of this one when it was made (0: it runs next)."""
        loop = asyncio.get_running_loop()
        self._turn: asyncio.Future[int | None] = loop.create_future()
        self._outcome: asyncio.Future[SendOutcome] = loop.create_future()

    @property
    def state(self) -> SendState:
        if self._outcome.done():
            return "done"
        return "running" if self._turn.done() else "queued"

    @property
    def outcome(self) -> SendOutcome | None:
        """The outcome once known, without waiting."""
        return self._outcome.result() if self._outcome.done() else None

    async def turn(self) -> int | None:
        """The turn number once the turn opened; None when the send was blocked or dropped."""
        return await asyncio.shield(self._turn)

    def __await__(self) -> Generator[Any, None, SendOutcome]:
        return asyncio.shield(self._outcome).__await__()

    # --- set by the Agent ------------------------------------------------------------------------

    def started(self, turn: int) -> None:
        if not self._turn.done():
            self._turn.set_result(turn)

    def finish(self, outcome: SendOutcome) -> None:
        if not self._turn.done():
            self._turn.set_result(outcome.turn if isinstance(outcome, TurnOutcome) else None)
        if not self._outcome.done():
            self._outcome.set_result(outcome)
