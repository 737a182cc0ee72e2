"""The prompt: multiline text where Enter sends, Shift+Enter or Ctrl+J breaks the line, and Up/Down
at the first/last line walk the history of what was sent."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from app.tui.completion import Suggestion, complete


class PromptInput(TextArea):
    """Posts `PromptInput.Submitted` on Enter; the screen decides whether that sends or steers.

    PageUp/PageDown page the conversation above rather than the prompt's few lines."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("pageup", "screen.page_transcript(-1)", "Scroll", key_display="PgUp/PgDn"),
        # no description: "PgUp/PgDn Scroll" names it, in the footer and the help
        Binding("pagedown", "screen.page_transcript(1)", show=False),
    ]

    KEYS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("enter", "Send; while a turn runs, steer it"),
        ("shift+enter ^j", "New line"),
        ("up/down", "Earlier and later prompts (from the first or last line)"),
        ("tab", "Complete the /command or @path being typed"),
        ("@path", "Attach a workspace file"),
    )
    """The keys `_on_key` handles, for the help screen (they are not bindings)."""

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

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.sent: list[str] = []
        self._position: int | None = None  # index into history while walking it
        self._draft = ""
        self.suggestions: tuple[Suggestion, ...] = ()  # set by the screen; Tab takes the first

    async def on_key(self, event: events.Key) -> None:
        """The prompt's own keys; any other goes on to `TextArea`'s handling (it runs after this
        one unless the key was taken: `prevent_default`)."""
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self._submit()
            return
        if event.key == "tab" and self.suggestions:
            event.stop()
            event.prevent_default()
            self.load_text(complete(self.text, self.suggestions[0]))
            self.move_cursor(self.document.end)
            return
        if event.key in ("shift+enter", "ctrl+j"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "up" and self.cursor_location[0] == 0 and self.sent:
            event.stop()
            event.prevent_default()
            self._walk(-1)
            return
        if event.key == "down" and self._position is not None and self._on_last_line():
            event.stop()
            event.prevent_default()
            self._walk(1)
            return

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
