"""Folding what lies far above the viewport while the conversation follows its end.

Every frame that changes a size lays out every displayed widget (Textual's reflow walks the whole
tree), so while a reply streams, each write laid out every mounted entry and every block of the
reply's sealed Markdown: hundreds of widgets, tens of milliseconds a frame, and the keyboard waited
behind them. A folded widget keeps its height (fixed to what it measured) and hides its children,
so a frame lays it out as one widget. Nothing folded is ever seen: `TranscriptView` folds only
what lies more than `KEEP_SCREENS` viewports above the end while it follows the end, and unfolds
everything before the view can move (the user scrolls, focus moves in, the width changes).
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from textual.widget import Widget

_hidden: WeakKeyDictionary[Widget, list[Widget]] = WeakKeyDictionary()
"""Each folded widget and the children its folding hid (those already hidden stay so)."""


def folded(widget: Widget) -> bool:
    return widget in _hidden


def fold(widget: Widget) -> bool:
    """Fix `widget`'s height to its laid-out height and hide its children; False (and nothing
    done) when it is folded already, has no displayed children or was never laid out."""
    height = widget.outer_size.height
    shown = [child for child in widget.children if child.display]
    if widget in _hidden or not shown or not height:
        return False
    widget.styles.height = height
    for child in shown:
        child.display = False
    _hidden[widget] = shown
    return True


def unfold(widget: Widget) -> None:
    """Show the children `fold` hid and give the height back to the stylesheet."""
    shown = _hidden.pop(widget, None)
    if shown is None:
        return
    for child in shown:
        if child.parent is widget:
            child.display = True
    widget.styles.height = None


def unfold_within(widget: Widget) -> None:
    """Unfold `widget` and its children."""
    unfold(widget)
    for child in widget.children:
        unfold(child)
