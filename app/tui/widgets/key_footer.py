"""The footer of every screen: its keys first, set closer together and without the command
palette hint when that is what it takes for all of them to fit, and without the screen's
least-used keys when even that is too wide (F1 lists them all).

A widget of Trellis's own, drawn as Textual's `Footer` is (its theme variables, its spacing), so
that leaving keys out uses nothing of Textual's but its public API.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget

_KEY_PADDING = {False: 3, True: 2}
"""Columns a footer key adds to its key and description: a space each side of the key and one
after the description; compact, one between them and one after (`FooterKey`'s styles)."""
_LAST_MARGIN = 1
"""Of a compact key's padding, the margin after it: the last key's needs no room (without the
palette hint beside it, nothing follows it)."""
_PALETTE_PADDING = 3
"""The `^p palette` hint's: the rule left of it, a space between its key and its description,
and one after it."""
HELP_ACTION = "help"
"""Never left out: F1 lists every key, those the footer had no room for too."""


class FooterKey(Widget):
    """One key of the footer: the key, then what it does; a click presses it."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {"footer-key--key", "footer-key--description"}
    DEFAULT_CSS = """
    FooterKey {
        width: auto;
        height: 1;
        text-wrap: nowrap;
        background: $footer-item-background;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
            padding: 0 1;
        }
        .footer-key--description {
            padding: 0 1 0 0;
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        &:hover {
            pointer: pointer;
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        &.-disabled {
            text-style: dim;
        }
        &.-compact {
            .footer-key--key {
                padding: 0;
            }
            .footer-key--description {
                padding: 0 0 0 1;
            }
        }
    }
    """

    def __init__(
        self, binding: Binding, key_display: str, *, enabled: bool, tooltip: str, classes: str = ""
    ) -> None:
        super().__init__(classes=classes)
        self.key = binding.key
        self.key_display = key_display
        self.description = binding.description
        self.action = binding.action
        self.enabled = enabled
        self.set_class(not enabled, "-disabled")
        if tooltip:
            self.tooltip = tooltip

    def render(self) -> Text:
        key_padding = self.get_component_styles("footer-key--key").padding
        description_padding = self.get_component_styles("footer-key--description").padding
        key = " " * key_padding.left + self.key_display + " " * key_padding.right
        text = Text.assemble((key, self.get_component_rich_style("footer-key--key")))
        if self.description:
            text.append(
                " " * description_padding.left + self.description + " " * description_padding.right,
                self.get_component_rich_style("footer-key--description"),
            )
        text.stylize_before(self.rich_style)
        return text

    def on_mouse_down(self) -> None:
        if self.enabled:
            self.app.simulate_key(self.key)
        else:
            self.app.bell()


class KeyFooter(Widget):
    """The screen's keys, measured: it picks the roomiest style in which all of them fit:
    spaced out with the command palette hint, then compact with it, then compact without it
    (Ctrl+P still opens the palette, and F1 lists every key). A fixed width threshold was
    wrong for the screens with more keys: at 110 columns replay cut `f4 Sessions`.

    When none holds them all, it leaves keys out until the rest fit: first those whose actions
    the screen names, in order, in its `FOOTER_SPARE` (a tuple of action strings), then the last
    shown, never F1's. Before, the last keys were cut at the edge: at 80 columns the session
    browser showed `f1 Hel`.
    """

    ALLOW_SELECT = False
    DEFAULT_CSS = """
    KeyFooter {
        layout: horizontal;
        color: $footer-foreground;
        background: $footer-background;
        dock: bottom;
        height: 1;
        &.-compact FooterKey {
            margin-right: 1;
        }
        FooterKey.-command-palette {
            dock: right;
            padding-right: 1;
            border-left: vkey $foreground 20%;
        }
        &.-compact FooterKey.-command-palette {
            padding-right: 0;
        }
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.compact = False
        """Keys set closer together (the `-compact` style)."""
        self.show_command_palette = True
        """The `^p palette` hint shows, at the right."""
        self.left_out: frozenset[str] = frozenset()
        """The actions of the keys this footer has no room for."""
        self._ready = False  # the screen has told its bindings once (focus settled)

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        self._ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        if not self._ready:
            return
        compact, palette, left_out = self._fit(self.size.width)
        self.compact, self.show_command_palette, self.left_out = compact, palette, left_out
        self.set_class(compact, "-compact")
        key_class = "-compact" if compact else ""
        shown: set[str] = set()  # by action: a key shared by several bindings shows once
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in shown or binding.action in left_out:
                continue
            shown.add(binding.action)
            display = self.app.get_key_display(binding)
            yield FooterKey(binding, display, enabled=enabled, tooltip=tooltip, classes=key_class)
        if palette and self.app.ENABLE_COMMAND_PALETTE:
            found = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _node, binding, enabled, tooltip = found
                yield FooterKey(
                    binding,
                    self.app.get_key_display(binding),
                    enabled=enabled,
                    tooltip=binding.tooltip or binding.description,
                    classes="-command-palette -compact",  # compact in either style
                )

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
