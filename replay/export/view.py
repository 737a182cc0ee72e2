"""`SessionView`: what every export format renders, already redacted."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.events import Event, SessionTitle, StepEnd, Usage
from engine.money import add_cost
from engine.privacy import PrivacyClass
from engine.store.base import SessionInfo
from replay.redaction import hidden_class, redact
from replay.transcript import Transcript, transcript_of


@dataclass(frozen=True, slots=True)
class SessionView:
    """A session as an export limited to `max_class` shows it.

    `events` are the redacted events and `hidden[i]` the class of what `events[i]` lost (None
    when nothing was hidden); `transcript` is built from the redacted events.
    """

    info: SessionInfo
    events: tuple[Event, ...]
    hidden: tuple[PrivacyClass | None, ...]
    transcript: Transcript
    max_class: PrivacyClass | None

    @property
    def title(self) -> str:
        """The title as the limit allows it: a redacted title event hides the stored one too."""
        titles = [e.data.title for e in self.events if isinstance(e.data, SessionTitle)]
        return titles[-1] if titles else self.info.title

    @property
    def usage(self) -> Usage:
        """Every step's tokens, part by part."""
        total = Usage()
        for event in self.events:
            if type(event.data) is StepEnd:
                total += event.data.usage
        return total

    @property
    def cost(self) -> dict[str, float]:
        """What the steps cost, per currency (none without a priced step)."""
        total: dict[str, float] = {}
        for event in self.events:
            if type(event.data) is StepEnd and event.data.cost is not None:
                total = add_cost(total, event.data.cost.amount, event.data.cost.currency)
        return total


def view_of(
    info: SessionInfo, events: Iterable[Event], max_class: PrivacyClass | None
) -> SessionView:
    originals = tuple(events)
    shown = tuple(redact(event, max_class) for event in originals)
    return SessionView(
        info=info,
        events=shown,
        hidden=tuple(hidden_class(event, max_class) for event in originals),
        transcript=transcript_of(shown),
        max_class=max_class,
    )
