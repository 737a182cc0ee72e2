"""Prefix stability: how much of each request repeats the one before, and why it sometimes does not.

A provider's prompt cache bills the part of a request identical to an earlier one at a fraction of
the price, and only as a prefix: one changed character early in the request makes everything
after it new input. `PrefixMeter` keeps the previous request's wire text and counts the leading
characters the next one shares with it (`step/start`'s `prefix_chars`); `PlannedBreaks` gathers
the reasons a request is meant to differ early (`prefix/break`), noted where they arise and logged
before the `step/start` they shorten.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.events import BreakReason, Payload, PrefixBreak, StepStart


def shared_prefix(first: str, second: str) -> int:
    """The number of leading characters `first` and `second` have in common.

    Halving the unresolved span compares each character about twice, in C (slice equality),
    instead of once in a Python loop."""
    shared = min(len(first), len(second))
    if first[:shared] == second[:shared]:
        return shared
    low, high = 0, shared  # first[:low] == second[:low]; they differ before `high`
    while high - low > 1:
        middle = (low + high) // 2
        if first[low:middle] == second[low:middle]:
            low = middle
        else:
            high = middle
    return low


@dataclass(slots=True)
class PrefixMeter:
    """The previous request's wire text, compared once with each new one and then replaced."""

    _previous: str | None = None

    def measure(self, text: str) -> int:
        """The leading characters `text` shares with the previous request (0 for the first)."""
        previous, self._previous = self._previous, text
        return 0 if previous is None else shared_prefix(previous, text)

    def forget(self) -> None:
        """The previous request is no longer the one to compare with (a rebuilt state)."""
        self._previous = None


@dataclass(slots=True)
class PlannedBreaks:
    """Reasons noted since the last request for the next one to differ early; each reason once."""

    _noted: dict[BreakReason, str] = field(default_factory=dict)

    def note(self, reason: BreakReason, detail: str = "") -> None:
        """Note `reason`; a later note of the same reason keeps the first detail and adds its own."""
        earlier = self._noted.get(reason)
        if earlier and detail and detail != earlier:
            detail = f"{earlier}; {detail}"
        self._noted[reason] = detail or earlier or ""

    def __bool__(self) -> bool:
        return bool(self._noted)

    def take(self, *, turn: int, step: int) -> list[PrefixBreak]:
        """The `prefix/break` payloads for the step about to start; forgets them."""
        breaks = [
            PrefixBreak(turn=turn, before_step=step, reason=reason, detail=detail)
            for reason, detail in self._noted.items()
        ]
        self._noted.clear()
        return breaks


@dataclass(frozen=True, slots=True)
class PrefixFigures:
    """Characters of requests that repeated the request before, of all their characters."""

    prefix_chars: int = 0
    request_chars: int = 0
    steps: int = 0

    @property
    def share(self) -> float | None:
        """The part of the requests that repeated a prefix; None when none was measured."""
        return self.prefix_chars / self.request_chars if self.request_chars else None

    def plus(self, step: StepStart) -> PrefixFigures:
        return PrefixFigures(
            self.prefix_chars + step.prefix_chars,
            self.request_chars + step.request_chars,
            self.steps + 1,
        )


@dataclass(frozen=True, slots=True)
class PrefixView:
    """One step's prefix figures, its turn's and its session's up to it, and the planned
    breaks that explain a short one."""

    step: PrefixFigures
    turn: PrefixFigures
    session: PrefixFigures
    breaks: tuple[PrefixBreak, ...] = ()


@dataclass(slots=True)
class PrefixTally:
    """Folds a log's `prefix/break` and `step/start` events into per-step, per-turn and
    per-session figures: the live agent and a replay of the log alone say the same. Steps
    logged before the prefix was measured (`request_chars` 0) count for nothing."""

    last: PrefixView | None = None
    _turn: int | None = None
    _turn_figures: PrefixFigures = field(default_factory=PrefixFigures)
    _session: PrefixFigures = field(default_factory=PrefixFigures)
    _breaks: list[PrefixBreak] = field(default_factory=list)

    def apply(self, payload: Payload) -> PrefixView | None:
        """Follow one event; returns the step's view at a `step/start`, else None."""
        # by exact class (see `Payload`)
        if type(payload) is PrefixBreak:
            self._breaks.append(payload)
            return None
        if type(payload) is not StepStart:
            return None
        if payload.turn != self._turn:
            self._turn, self._turn_figures = payload.turn, PrefixFigures()
        breaks = tuple(b for b in self._breaks if b.before_step == payload.step)
        self._breaks.clear()
        if not payload.request_chars:
            step = PrefixFigures()
        else:
            step = PrefixFigures().plus(payload)
            self._turn_figures = self._turn_figures.plus(payload)
            self._session = self._session.plus(payload)
        self.last = PrefixView(step, self._turn_figures, self._session, breaks)
        return self.last
