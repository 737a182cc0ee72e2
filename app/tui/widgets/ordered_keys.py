"""A text field's own keys run in the order they were typed.

Textual runs a focused widget's bindings (Backspace, the arrows, Ctrl+U...) only once the key has
bubbled up to the app, while the characters that came in the same read of the terminal (a paste
without bracketed paste, a fast typist, a key held down) are inserted as they arrive: "ab",
Backspace, "c" left "ab". The fields here run their own bindings as the key reaches them."""

from __future__ import annotations

from functools import cache

from textual import events
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Input


@cache
def own_actions(cls: type[Widget]) -> dict[str, str]:
    """The action of each key `cls` and the classes it derives from bind (a subclass's binding
    replaces its base's for the same key)."""
    actions: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        for binding in Binding.make_bindings(base.__dict__.get("BINDINGS", ())):
            actions[binding.key] = binding.action
    return actions


async def run_own_binding(widget: Widget, event: events.Key) -> bool:
    """Run the action `widget` itself binds to the key, now; whether one ran (the event is then
    stopped and its default handling prevented). A printable key is the field's to insert."""
    if event.is_printable:
        return False
    action = own_actions(type(widget)).get(event.key)
    if action is None or not await widget.app.run_action(action, widget):
        return False
    event.stop()
    event.prevent_default()
    return True


class OrderedInput(Input):
    """An `Input` whose own keys keep their place among the characters typed."""

    async def on_key(self, event: events.Key) -> None:
        await run_own_binding(self, event)
