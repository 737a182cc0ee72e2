"""The command palette (Ctrl+P): every slash command of the engine's registry and every screen."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from app.tui.widgets.prompt_input import PromptInput
from engine.commands import REGISTRY


def literal(text: str) -> str:
    """`text` as Textual markup that reads as `text` itself: the palette reads a hit's help as
    markup, where `[KEEP]` is a style (`textual.markup.escape` leaves brackets of capitals and
    digits alone). In that markup a backslash escapes the bracket after it and any before it stand
    as written."""
    return text.replace("[", "\\[")


class TrellisCommands(Provider):
    """A slash command puts itself in the prompt (with its usage hint); a screen opens."""

    def _entries(self) -> list[tuple[str, str, Callable[[], object]]]:
        screen = self.screen
        entries: list[tuple[str, str, Callable[[], object]]] = [
            (
                "Context inspector",
                "the last request, item by item (F3)",
                partial(screen.run_action, "inspect"),
            ),
            (
                "Side panel",
                "Areas, GC, Outbox, Budget (F2)",
                partial(screen.run_action, "toggle_panel"),
            ),
            (
                "Sessions",
                "browse, resume, replay, fork, export, delete (F4)",
                partial(self.app.run_action, "sessions"),
            ),
            (
                "Keys",
                "every key of this screen and the slash commands (F1)",
                partial(self.app.run_action, "help"),
            ),
        ]
        for command in REGISTRY.commands:
            entries.append(
                (
                    f"/{command.name}",
                    literal(f"{command.usage} — {command.description}"),
                    partial(self._prefill, command.name),
                )
            )
        return entries

    def _prefill(self, name: str) -> None:
        for prompt in self.screen.query(PromptInput):
            prompt.load_text(f"/{name} ")
            prompt.move_cursor(prompt.document.end)
            prompt.focus()

    async def discover(self) -> Hits:
        for title, help_text, action in self._entries():
            yield DiscoveryHit(title, action, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, action in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), action, help=help_text)
