"""The footer of every screen: its keys first, set closer together and without the command
palette hint when that is what it takes for all of them to fit, and without the screen's
least-used keys when even that is too wide (F1 lists them all).

A widget of Trellis's own rather than a subclass of Textual's `Footer`: measuring and leaving keys
out needs the footer's parts, which Textual keeps private.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget

SPACED_GAP = 2
"""Columns between two keys when there is room: a key and its description read as a pair."""
COMPACT_GAP = 1
PALETTE_RULE = 2
"""The palette hint's rule left of it and the space after the rule."""
HELP_ACTION = "help"
"""Never left out: F1 lists every key, those the footer had no room for too."""


@dataclass(frozen=True, slots=True)
class FooterItem:
    """One place in the footer: the first key of one action (`esc Close`), or the keys of one
    binding group (`← → Step`), with what they do."""

    key: str
    """The first key's name, which a click presses."""
    label: str
    description: str
    actions: tuple[str, ...]
    enabled: bool

    @property
    def width(self) -> int:
        return len(self.label) + (1 + len(self.description) if self.description else 0)

    def content(self) -> Content:
        """The label and the description, both literal (no markup is read from either)."""
        parts: list[tuple[str, str] | str] = [(self.label, "bold $footer-key-foreground")]
        if self.description:
            parts += [" ", (self.description, "$footer-description-foreground")]
        return Content.assemble(*parts)


def footer_items(screen: Screen[object]) -> tuple[list[FooterItem], FooterItem | None]:
    """The shown keys of `screen` now, in the order Textual resolves them, and the palette's."""
    app = screen.app
    palette: FooterItem | None = None
    by_action: dict[str, list[tuple[Binding, bool]]] = {}
    for key, (_node, binding, enabled, _tooltip) in screen.active_bindings.items():
        if key == app.COMMAND_PALETTE_BINDING:
            if app.ENABLE_COMMAND_PALETTE:
                label = app.get_key_display(binding)
                palette = FooterItem(key, label, binding.description, (binding.action,), enabled)
        elif binding.show:
            by_action.setdefault(binding.action, []).append((binding, enabled))
    items: list[FooterItem] = []
    grouped: dict[str, int] = {}  # a group's description -> its index in `items`
    for action, bindings in by_action.items():
        first, enabled = bindings[0]
        label = app.get_key_display(first)  # F1 lists the others (`esc/q`)
        group = first.group
        if group is None:
            items.append(FooterItem(first.key, label, first.description, (action,), enabled))
            continue
        at = grouped.get(group.description)
        if at is None:
            grouped[group.description] = len(items)
            items.append(FooterItem(first.key, label, group.description, (action,), enabled))
        else:
            item = items[at]
            items[at] = FooterItem(
                item.key,
                f"{item.label} {label}",
                item.description,
                (*item.actions, action),
                item.enabled or enabled,
            )
    return items, palette


@dataclass(frozen=True, slots=True)
class FooterFit:
    """How the footer lays its keys out at one width."""

    compact: bool
    palette: bool
    left_out: frozenset[str]
    """The actions of the keys there is no room for."""


def fit(
    items: Iterable[FooterItem],
    palette: FooterItem | None,
    width: int,
    spare: Iterable[str] = (),
) -> FooterFit:
    """The roomiest style in which every key fits `width`: spaced out with the palette hint,
    then compact with it, then compact without it; when none holds them all, keys are left out
    until the rest fit: first those whose actions are in `spare`, in order, then the last
    shown, never F1's."""
    items = list(items)
    hint = palette.width + PALETTE_RULE + 1 if palette is not None else 0
    for compact, with_palette in ((False, True), (True, True), (True, False)):
        gap = COMPACT_GAP if compact else SPACED_GAP
        # spaced out, the footer's left padding; a gap after each key but the last
        needed = (0 if compact else 1) + sum(i.width for i in items) + gap * max(len(items) - 1, 0)
        if with_palette:
            needed += hint + gap
        if needed <= width:
            return FooterFit(compact, with_palette and palette is not None, frozenset())
    order = [a for a in spare if any(a in item.actions for item in items)]
    order += [a for item in reversed(items) for a in item.actions if a not in order]
    left_out: set[str] = set()
    for action in order:
        if needed <= width:
            break
        for item in items:
            if action in item.actions and HELP_ACTION not in item.actions:
                if not set(item.actions) <= left_out:
                    needed -= item.width + COMPACT_GAP
                left_out.update(item.actions)
    return FooterFit(True, False, frozenset(left_out))


class FooterKey(Widget):
    """A key and what it does; a click presses the key."""

    DEFAULT_CSS = """
    FooterKey {
        width: auto;
        height: 1;
        text-wrap: nowrap;
        &:hover {
            background: $block-hover-background;
        }
        &.-disabled {
            text-style: dim;
        }
    }
    """

    def __init__(self, item: FooterItem) -> None:
        super().__init__(classes="-disabled" if not item.enabled else "")
        self.item = item

    def render(self) -> Content:
        return self.item.content()

    def on_click(self, event: events.Click) -> None:
        event.stop()
        if self.item.enabled:
            self.app.simulate_key(self.item.key)


class KeyFooter(Widget):
    """The screen's keys on one line (see the module docstring). A screen may name, in its
    `FOOTER_SPARE`, the actions whose keys go first when there is no room."""

    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom;
        height: 1;
        layout: horizontal;
        background: $footer-background;
        color: $footer-foreground;
        padding-left: 1;
        FooterKey {
            margin-right: 2;
        }
        &.-compact {
            padding-left: 0;
            FooterKey {
                margin-right: 1;
            }
        }
        FooterKey.-palette {
            dock: right;
            margin-right: 0;
            padding: 0 1;
            border-left: vkey $foreground 20%;
        }
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.compact = False
        self.palette = False
        self.left_out: frozenset[str] = frozenset()
        self.shown: list[FooterItem] = []
        """The keys on the footer now, in order (the palette's not among them)."""

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen: Screen[object]) -> None:
        if self.is_attached:
            self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        items, palette = footer_items(self.screen)
        spare = getattr(self.screen, "FOOTER_SPARE", ())
        laid = fit(items, palette, self.outer_size.width or self.app.size.width, spare)
        self.compact, self.palette, self.left_out = laid.compact, laid.palette, laid.left_out
        self.set_class(laid.compact, "-compact")
        self.shown = [i for i in items if not set(i.actions) <= laid.left_out]
        for item in self.shown:
            yield FooterKey(item)
        if laid.palette and palette is not None:
            yield FooterKey(palette).add_class("-palette")

    def on_resize(self, event: events.Resize) -> None:
        items, palette = footer_items(self.screen)
        spare = getattr(self.screen, "FOOTER_SPARE", ())
        laid = fit(items, palette, self.outer_size.width, spare)
        if laid != FooterFit(self.compact, self.palette, self.left_out):
            self.call_after_refresh(self.recompose)
