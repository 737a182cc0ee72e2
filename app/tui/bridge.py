"""The one place engine events enter the app: each becomes an `EngineEvent` message.

The Agent calls subscribers inside its appends, on the loop the app runs on, so posting a message
(non-blocking) is all a subscriber may do; widgets react to the messages in their own handlers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from textual.message import Message
from textual.message_pump import MessagePump

from engine.events import Event, LiveEvent
from engine.session import Subscriber


class EngineEvent(Message):
    """One durable or live engine event, in log order."""

    def __init__(self, event: Event | LiveEvent) -> None:
        super().__init__()
        self.event = event


class EventSource(Protocol):
    """What the console shows: an `Agent` it writes through, or a `Session` it follows as
    another process writes it (`engine.replica`); both deliver the same events the same way."""

    async def subscribe_from(self, subscriber: Subscriber, from_seq: int) -> Callable[[], None]:
        """Deliver the events from `from_seq`, then each new one; returns the unsubscribe."""
        ...


async def bridge(source: EventSource, target: MessagePump, *, from_seq: int) -> Callable[[], None]:
    """Post every event of `source` from `from_seq` on to `target` (a resumed session's older
    events read from the store first); returns the unsubscribe."""

    def post(event: Event | LiveEvent) -> None:
        target.post_message(EngineEvent(event))

    return await source.subscribe_from(post, from_seq)
