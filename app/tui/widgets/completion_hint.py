"""The line above the prompt that offers completions: slash commands with their usage, `@` files."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from app.tui.completion import Suggestion

SHOWN = 6


class CompletionHint(Widget):
    """Hidden when there is nothing to offer; Tab takes the first suggestion."""

    DEFAULT_CSS = """
    CompletionHint {
        height: auto;
        max-height: 7;
        padding: 0 2;
        color: $text-muted;
        display: none;
    }
    CompletionHint.-offering {
        display: block;
    }
    """

    suggestions: reactive[tuple[Suggestion, ...]] = reactive((), layout=True)

    def watch_suggestions(self, suggestions: tuple[Suggestion, ...]) -> None:
        self.set_class(bool(suggestions), "-offering")

    def render(self) -> Text:
        text = Text()
        for number, suggestion in enumerate(self.suggestions[:SHOWN]):
            if number:
                text.append("\n")
            text.append(suggestion.label, style="bold" if number == 0 else "")
            if suggestion.hint:
                text.append(f"  {suggestion.hint}", style="dim")
        if len(self.suggestions) > SHOWN:
            text.append(f"\n… {len(self.suggestions) - SHOWN} more", style="dim")
        if self.suggestions:
            text.append("   (tab completes)", style="dim italic")
        return text
