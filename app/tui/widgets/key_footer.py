"""The footer of every screen: its keys first, set closer together and without the command
palette hint when that is what it takes for all of them to fit."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer

_KEY_PADDING = {False: 3, True: 2}
"""Columns a footer key adds to its key and description: a space each side of the key and one
after the description; compact, one between them and one after (Textual's `Footer` styles)."""
_PALETTE_PADDING = 3
"""The `^p palette` hint's: the rule left of it, a space between its key and its description,
and one after it."""


class KeyFooter(Footer):
    """A `Footer` that measures its keys and picks the roomiest style in which all of them fit:
    spaced out with the command palette hint, then compact with it, then compact without it
    (Ctrl+P still opens the palette, and F1 lists every key). A fixed width threshold was
    wrong for the screens with more keys: at 110 columns replay cut `f4 Sessions`."""

    def compose(self) -> ComposeResult:
        compact, palette = self._fit(self.size.width)
        self.set_reactive(Footer.compact, compact)
        self.set_class(compact, "-compact")
        self.set_reactive(Footer.show_command_palette, palette)
        yield from super().compose()

    def on_resize(self, event: events.Resize) -> None:
        if self._fit(event.size.width) != (self.compact, self.show_command_palette):
            self.call_after_refresh(self.recompose)

    def _fit(self, width: int) -> tuple[bool, bool]:
        """(compact, show the palette hint) for a footer `width` columns wide."""
        keys: dict[str, int] = {}  # by action: a key shared by several bindings shows once
        palette = 0
        for key, (_, binding, _, _) in self.screen.active_bindings.items():
            label = len(self.app.get_key_display(binding)) + len(binding.description)
            if key == self.app.COMMAND_PALETTE_BINDING:
                palette = label
            elif binding.show:
                keys.setdefault(binding.action, label)
        if not self.app.ENABLE_COMMAND_PALETTE:
            palette = 0
        for compact, with_palette in ((False, True), (True, True), (True, False)):
            needed = sum(label + _KEY_PADDING[compact] for label in keys.values())
            if with_palette and palette:
                needed += palette + _PALETTE_PADDING
            if needed <= width:
                return compact, with_palette
        return True, False
