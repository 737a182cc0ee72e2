"""The footer of every screen: its keys first, the command palette hint only where it fits, and
keys set closer together on narrow terminals."""

from __future__ import annotations

from textual import events
from textual.widgets import Footer

PALETTE_HINT_WIDTH = 90
"""Below this many columns the `^p palette` hint is left out (Ctrl+P still opens the palette and
F1 lists it), so a screen's own keys keep the line at 80 columns."""


class KeyFooter(Footer):
    """A `Footer` that gives the command palette hint's room back to the keys on narrow
    terminals and sets them compactly there: at 80 columns a running turn's keys (Esc among
    them) ran past the edge and `f4 Sessions` was cut."""

    def on_resize(self, event: events.Resize) -> None:
        wide = event.size.width >= PALETTE_HINT_WIDTH
        self.compact = not wide
        if self.show_command_palette != wide:
            self.show_command_palette = wide
            self.screen.refresh_bindings()  # the footer composes its keys again on this
