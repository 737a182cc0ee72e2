"""The footer of every screen: its keys first, set closer together and without the command
palette hint when that is what it takes for all of them to fit, and without the screen's
least-used keys when even that is too wide (F1 lists them all)."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

_KEY_PADDING = {False: 3, True: 2}
"""Columns a footer key adds to its key and description: a space each side of the key and one
after the description; compact, one between them and one after (Textual's `Footer` styles)."""
_LAST_MARGIN = 1
"""Of a compact key's padding, the margin after it: the last key's needs no room (without the
palette hint beside it, nothing follows it)."""
_PALETTE_PADDING = 3
"""The `^p palette` hint's: the rule left of it, a space between its key and its description,
and one after it."""
HELP_ACTION = "help"
"""Never left out: F1 lists every key, those the footer had no room for too."""


class KeyFooter(Footer):
    """A `Footer` that measures its keys and picks the roomiest style in which all of them fit:
    spaced out with the command palette hint, then compact with it, then compact without it
    (Ctrl+P still opens the palette, and F1 lists every key). A fixed width threshold was
    wrong for the screens with more keys: at 110 columns replay cut `f4 Sessions`.

    When none holds them all, it leaves keys out until the rest fit: first those whose actions
    the screen names, in order, in its `FOOTER_SPARE` (a tuple of action strings), then the last
    shown, never F1's. Before, the last keys were cut at the edge: at 80 columns the session
    browser showed `f1 Hel`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.left_out: frozenset[str] = frozenset()
        """The actions of the keys this footer has no room for."""

    def compose(self) -> ComposeResult:
        compact, palette, left_out = self._fit(self.size.width)
        self.set_reactive(Footer.compact, compact)
        self.set_class(compact, "-compact")
        self.set_reactive(Footer.show_command_palette, palette)
        self.left_out = left_out
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.action in left_out:
                continue
            yield widget
        if left_out:  # `Footer.compose` gave every key a column
            columns = self.styles.grid_size_columns
            self.styles.grid_size_columns = max(1, columns - len(left_out))

    def on_resize(self, event: events.Resize) -> None:
        fit = self._fit(event.size.width)
        if fit != (self.compact, self.show_command_palette, self.left_out):
            self.call_after_refresh(self.recompose)

    def _fit(self, width: int) -> tuple[bool, bool, frozenset[str]]:
        """(compact, show the palette hint, the actions left out) for a footer `width` wide."""
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
            elif compact:
                needed -= _LAST_MARGIN
            if needed <= width:
                return compact, with_palette, frozenset()
        spare = [a for a in getattr(self.screen, "FOOTER_SPARE", ()) if a in keys]
        spare += [a for a in reversed(keys) if a not in spare and a != HELP_ACTION]
        left_out: set[str] = set()
        for action in spare:
            if needed <= width:
                break
            needed -= keys[action] + _KEY_PADDING[True]
            left_out.add(action)
        return True, False, frozenset(left_out)
