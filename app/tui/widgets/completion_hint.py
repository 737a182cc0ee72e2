"""The lines above the prompt that offer completions: slash commands with their usage, `@` files."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from app.tui.completion import Suggestion

SHOWN = 6
"""Suggestions listed at once; the list scrolls to keep the highlighted one among them."""
MARK = "▸ "
"""Before the highlighted suggestion (the others are indented as far)."""


class CompletionHint(Widget):
    """Hidden when there is nothing to offer. With completions, `highlighted` is the one Tab or
    Enter takes; with only a command's usage to show, there is none."""

    DEFAULT_CSS = """
    CompletionHint {
        height: auto;
        max-height: 7;
        padding: 0 1;
        color: $text-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        display: none;
    }
    CompletionHint.-offering {
        display: block;
    }
    """

    suggestions: reactive[tuple[Suggestion, ...]] = reactive((), layout=True)
    highlighted: reactive[int | None] = reactive(None)

    def watch_suggestions(self, suggestions: tuple[Suggestion, ...]) -> None:
        self.set_class(bool(suggestions), "-offering")

    def render(self) -> Text:
        suggestions, highlighted = self.suggestions, self.highlighted
        first = 0
        if highlighted is not None:
            first = min(max(0, highlighted - SHOWN + 1), max(0, len(suggestions) - SHOWN))
        lines: list[Text] = []
        for number in range(first, min(first + SHOWN, len(suggestions))):
            suggestion = suggestions[number]
            chosen = number == highlighted
            line = Text(MARK if chosen else " " * len(MARK))
            line.append(suggestion.label, style="bold reverse" if chosen else "bold")
            if suggestion.hint:
                line.append(f"  {suggestion.hint}", style="dim")
            lines.append(line)
        footing: list[str] = []
        if len(suggestions) > SHOWN:
            where = highlighted + 1 if highlighted is not None else first + SHOWN
            footing.append(f"{where} of {len(suggestions)}")
        if highlighted is not None:
            footing.append("tab/↑↓ choose · enter takes · esc hides")
        if footing:
            lines.append(Text(" " * len(MARK) + " · ".join(footing), style="dim italic"))
        return Text("\n").join(lines)
