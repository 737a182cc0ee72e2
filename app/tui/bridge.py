"""The one place engine events enter the app: they reach the screen as `EngineEvents` messages.

The Agent calls subscribers inside its appends, on the loop the app runs on, so posting a message
(non-blocking) is all a subscriber may do; widgets react to the messages in their own handlers.
Events that arrive while a message waits for its handler join it: a reply streams hundreds of
deltas a second, and a message each cost the screen's queue a dispatch per delta, so one message
carries every event since the screen last took them, in order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from textual.message import Message
from textual.message_pump import MessagePump

from engine.events import Event, LiveEvent
from engine.session import Subscriber


class EngineEvents(Message):
    """Durable and live engine events, in log order: every event posted since the last message
    was taken. `take` hands them over once; events arriving later go into a new message."""

    def __init__(self, event: Event | LiveEvent) -> None:
        super().__init__()
        self._events: list[Event | LiveEvent] = [event]
        self.taken = False

    def add(self, event: Event | LiveEvent) -> None:
        self._events.append(event)

    def take(self) -> list[Event | LiveEvent]:
        self.taken = True
        events, self._events = self._events, []
        return events


class EventSource(Protocol):
    """What the console shows: an `Agent` it writes through, or a `Session` it follows as
    another process writes it (`engine.replica`); both deliver the same events the same way."""

    async def subscribe_from(self, subscriber: Subscriber, from_seq: int) -> Callable[[], None]:
        """Deliver the events from `from_seq`, then each new one; returns the unsubscribe."""
        ...


async def bridge(source: EventSource, target: MessagePump, *, from_seq: int) -> Callable[[], None]:
    """Post every event of `source` from `from_seq` on to `target` (a resumed session's older
    events read from the store first), gathered into as few messages as the target's pace
    allows; returns the unsubscribe."""
    waiting: EngineEvents | None = None  # posted, not yet taken by its handler

    def post(event: Event | LiveEvent) -> None:
        nonlocal waiting
        if waiting is not None and not waiting.taken and target.is_running:
            waiting.add(event)
            return
        waiting = EngineEvents(event)
        if not target.post_message(waiting):
            waiting = None  # a closed target: nothing gathers for a handler that never comes

    return await source.subscribe_from(post, from_seq)
