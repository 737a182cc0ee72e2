"""The prompt: multiline text where Enter sends, Shift+Enter or Ctrl+J breaks the line, and Up/Down
at the first/last line walk the history of what was sent; while suggestions are shown, Tab, Up/Down,
Enter and Esc choose among them."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from app.tui.completion import Offer
from app.tui.widgets.ordered_keys import run_own_binding


class PromptInput(TextArea):
    """Posts `PromptInput.Submitted` on Enter; the screen decides whether that sends or steers.

    PageUp/PageDown page the conversation above rather than the prompt's few lines."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("pageup", "screen.page_transcript(-1)", "Scroll", key_display="PgUp/PgDn"),
        # no description: "PgUp/PgDn Scroll" names it, in the footer and the help
        Binding("pagedown", "screen.page_transcript(1)", show=False),
    ]

    KEYS: ClassVar[tuple[tuple[str, str], ...]] = (
        (
            "enter",
            "Send; while a turn runs, steer it. With suggestions shown: take the highlighted",
        ),
        ("shift+enter,ctrl+j", "New line"),
        ("up,down", "Earlier and later prompts (from the first or last line); among suggestions"),
        (
            "tab,shift+tab",
            "Take the highlighted suggestion; again: the next (Shift+Tab: the one before)",
        ),
        ("escape", "Hide the suggestions"),
    )
    """The keys `on_key` handles (named as a binding names them), for the help screen; they are
    not bindings: what each does depends on the text and the suggestions."""
    MENTION: ClassVar[tuple[str, str]] = ("@path", "Attach a workspace file")

    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: round $primary 60%;
        padding: 0 1;
    }
    PromptInput:focus {
        border: round $primary;
    }
    """

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Offered(Message):
        """The suggestions' highlight moved, or they were taken or hidden (`offer` None)."""

        def __init__(self, offer: Offer | None) -> None:
            super().__init__()
            self.offer = offer

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.sent: list[str] = []
        self._position: int | None = None  # index into history while walking it
        self._draft = ""
        self.offer: Offer | None = None  # set by the screen as the text changes

    @property
    def cycling(self) -> bool:
        """The text is a suggestion Tab put there: the offer stays while Tab goes through it."""
        offer = self.offer
        return offer is not None and offer.taken and self.text == offer.text

    async def on_key(self, event: events.Key) -> None:
        """The prompt's own keys; any other goes on to `TextArea`'s handling (it runs after this
        one unless the key was taken: `prevent_default`)."""
        key = event.key
        if self.offer is not None and key in ("tab", "shift+tab", "up", "down", "enter", "escape"):
            event.stop()
            event.prevent_default()
            self._choose(self.offer, key)
            return
        if key == "tab":  # nothing to complete: the prompt keeps the keyboard
            event.stop()
            event.prevent_default()
            return
        if key == "enter":
            event.stop()
            event.prevent_default()
            self._submit()
            return
        if key in ("shift+enter", "ctrl+j"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if key == "up" and self.cursor_location[0] == 0 and self.sent:
            event.stop()
            event.prevent_default()
            self._walk(-1)
            return
        if key == "down" and self._position is not None and self._on_last_line():
            event.stop()
            event.prevent_default()
            self._walk(1)
            return
        # Backspace, the arrows, Ctrl+K...: in the order typed (`ordered_keys`)
        await run_own_binding(self, event)

    def _choose(self, offer: Offer, key: str) -> None:
        """A key while suggestions are shown: Tab/Shift+Tab put the next/previous one in the text
        (the highlighted one at the first Tab; the only one, and the offer ends), Up/Down move
        the highlight (the text follows once Tab has put one there), Enter takes the highlighted
        one (and sends a command that needs no argument), Esc hides them."""
        match key:
            case "tab" | "shift+tab" if len(offer.suggestions) == 1:  # nothing to go through
                self._take(offer)
                return
            case "tab" | "shift+tab":
                step = 1 if key == "tab" else -1
                chosen = replace(
                    offer.moved(step) if offer.taken or step < 0 else offer, taken=True
                )
                self._show(chosen.text)
            case "up" | "down":
                chosen = offer.moved(-1 if key == "up" else 1)
                if chosen.taken:
                    self._show(chosen.text)
            case "enter":
                self._take(offer)
                if offer.current.sends:
                    self._submit()
                return
            case _:
                self.offer = None
                self.post_message(self.Offered(None))
                return
        self.offer = chosen
        self.post_message(self.Offered(chosen))

    def _take(self, offer: Offer) -> None:
        """The highlighted suggestion into the text, and the offer over."""
        self.offer = None
        self.post_message(self.Offered(None))
        self._show(offer.text)

    def _show(self, text: str) -> None:
        if text != self.text:
            self.load_text(text)
        self.move_cursor(self.document.end)

    def _on_last_line(self) -> bool:
        return self.cursor_location[0] == self.document.line_count - 1

    def _submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._position = None
        self.clear()
        self.post_message(self.Submitted(text))

    def _walk(self, step: int) -> None:
        if self._position is None:
            self._draft = self.text
            position = len(self.sent)
        else:
            position = self._position
        position += step
        if position >= len(self.sent):
            self._position = None
            self.load_text(self._draft)
        else:
            self._position = max(position, 0)
            self.load_text(self.sent[self._position])
        self.move_cursor(self.document.end)

    def give_back(self, text: str) -> None:
        """Put words the engine did not deliver (dropped steering) back in front of the user."""
        current = self.text
        self.load_text(text if not current.strip() else f"{text}\n{current}")
        self.move_cursor(self.document.end)
