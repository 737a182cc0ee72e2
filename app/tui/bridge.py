"""The one place engine events enter the app: each becomes an `EngineEvent` message.

The Agent calls subscribers inside its appends, on the loop the app runs on, so posting a message
(non-blocking) is all a subscriber may do; widgets react to the messages in their own handlers.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.message import Message
from textual.message_pump import MessagePump

from engine.agent import Agent
from engine.events import Event, LiveEvent


class EngineEvent(Message):
    """One durable or live engine event, in log order."""

    def __init__(self, event: Event | LiveEvent) -> None:
        super().__init__()
        self.event = event


async def bridge(agent: Agent, target: MessagePump, *, from_seq: int) -> Callable[[], None]:
    """Post every event of `agent` from `from_seq` on to `target` (a resumed session's older
    events read from the store first); returns the unsubscribe."""

    def post(event: Event | LiveEvent) -> None:
        target.post_message(EngineEvent(event))

    return await agent.subscribe_from(post, from_seq)
