"""Engine events reach the screen in order, gathered into one message while one waits for its
handler (a reply streams hundreds of deltas a second; a message each cost a dispatch each)."""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import App
from textual.widget import Widget

from app.tui.bridge import EngineEvents, bridge
from engine.events import AssistantDelta, Event, LiveEvent, make_live_event
from engine.session import Subscriber


class Source:
    """An event source whose events the test emits by hand."""

    def __init__(self) -> None:
        self.subscriber: Subscriber | None = None

    async def subscribe_from(self, subscriber: Subscriber, from_seq: int) -> Callable[[], None]:
        self.subscriber = subscriber
        return lambda: None

    def emit(self, *texts: str) -> None:
        assert self.subscriber is not None
        for text in texts:
            self.subscriber(
                make_live_event(AssistantDelta(turn=1, step=1, text=text), 0.0, after_seq=0)
            )


class Target(Widget):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[list[Event | LiveEvent]] = []

    @on(EngineEvents)
    def _events(self, message: EngineEvents) -> None:
        self.messages.append(message.take())


def texts(events: list[Event | LiveEvent]) -> list[str]:
    return [event.data.text for event in events if isinstance(event.data, AssistantDelta)]


async def test_events_posted_while_a_message_waits_join_it_in_order() -> None:
    app: App[None] = App()
    async with app.run_test() as pilot:
        target = Target()
        await app.mount(target)
        source = Source()
        await bridge(source, target, from_seq=0)
        source.emit("a", "b", "c")  # one turn of the loop: the handler has not run
        await pilot.pause()
        source.emit("d")
        await pilot.pause()
        source.emit("e", "f")
        await pilot.pause()
        assert [texts(events) for events in target.messages] == [["a", "b", "c"], ["d"], ["e", "f"]]
