"""Folding what lies far above the viewport while the conversation follows its end.

Every frame that changes a size lays out every displayed widget (Textual's reflow walks the whole
tree) and the conversation's grow with each write of a streaming reply, so each write laid out
every mounted entry and every block of the reply's sealed Markdown: hundreds of widgets, tens of
milliseconds a frame, and the keyboard waited behind them. What lies more than `KEEP_SCREENS`
viewports above the end is folded: whole entries are hidden and one blank widget at the top takes
their lines (a container's padding would not scroll); the parts of the entry astride that line (a
long reply's sealed Markdown widgets) fold into the first of them, which keeps their lines with
its children hidden while the others are hidden whole. A frame then
lays out only what is near the viewport, and the scrollbar stands as before. Nothing folded is ever
seen: `Folds.unfold` runs before the view can move (the user scrolls, focus moves in, the width
changes, entries are trimmed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from textual.containers import ScrollableContainer
from textual.geometry import Size
from textual.widget import Widget

KEEP_SCREENS = 1
"""What lies within this many viewports of the end stays unfolded: the one on screen (everything
unfolds before the view moves, so more would be laid out every frame for nothing)."""


@dataclass(eq=False)
class _Folded:
    """A folded part: the children its folding hid (those hidden already stay so), and the parts
    after it hidden whole, whose lines it also holds."""

    lines: int
    children: list[Widget]
    taken: list[Widget] = field(default_factory=list)
    own: int = 0  # its own height, the lines it held before it took any


_folded: WeakKeyDictionary[Widget, _Folded] = WeakKeyDictionary()
# Unfolded parts that held the lines of others, by those lines: until a layout gives such a part
# its own height again it still has them, and folding it then counted them twice (a reply grew
# by hundreds of blank lines). Textual's refresh after an unfold need not have laid it out: a
# widget's layout request reaches the screen on that widget's own idle, which may come later.
_unfolded_at: WeakKeyDictionary[Widget, int] = WeakKeyDictionary()


def laid_out(widget: Widget) -> bool:
    """False while a layout has yet to follow an unfold: `widget` shown again is not in the
    screen's map (an empty region), or unfolded it still has the height it had folded with
    other parts. A pass that measured in between would hide entries with lines the view still
    holds, and the conversation would grow by a reply's length of blank lines."""
    if not widget.virtual_region.width:
        return False
    lines = _unfolded_at.get(widget)
    if lines is None:
        return True
    if widget.outer_size.height == lines:
        return False
    del _unfolded_at[widget]
    return True


def fold(widget: Widget) -> bool:
    """Fix `widget`'s height to its laid-out height and hide its children; False (and nothing
    done) when it is folded already, has no displayed children or was never laid out."""
    height = widget.outer_size.height
    shown = [child for child in widget.children if child.display]
    if widget in _folded or not shown or not height:
        return False
    widget.styles.height = height
    for child in shown:
        child.display = False
    _folded[widget] = _Folded(height, shown, own=height)
    return True


def take(head: Widget, parts: Sequence[Widget]) -> None:
    """`head`, folded, takes the lines of `parts` (laid out, the displayed siblings right after
    it) and they are hidden whole: however long a reply grows, its far parts are one widget in a
    frame's layout, not one each."""
    folded = _folded[head]
    for part in parts:
        folded.lines += outer_height(part)
        part.display = False
        folded.taken.append(part)
    head.styles.height = folded.lines


def unfold(widget: Widget) -> None:
    """Show the children and the parts `fold` and `take` hid, and give the height back to the
    stylesheet."""
    folded = _folded.pop(widget, None)
    if folded is None:
        return
    if folded.lines != folded.own:
        _unfolded_at[widget] = folded.lines
    for child in folded.children:
        if child.parent is widget:
            child.display = True
    for part in folded.taken:
        if part.parent is widget.parent:
            part.display = True
    widget.styles.height = None


def unfold_within(widget: Widget) -> None:
    """Unfold `widget`'s folded parts."""
    for child in widget.children:
        unfold(child)


def outer_height(widget: Widget) -> int:
    """The lines `widget` takes in a column: its height and its bottom margin."""
    return widget.outer_size.height + widget.styles.margin.bottom


class FoldedLines(Widget):
    """The lines of the entries hidden above, blank: the first child of the conversation. Its
    height is its content's (a stream layout reads no `height` style) and never changes: folding
    more mounts a new one in its place. Textual's stream layout reuses a child's last placement
    unless that child's own layout request has reached the screen, and under load the view was
    once laid out between the lines growing and their request arriving: they kept their old
    height for good, and the conversation's extent lost a whole reply."""

    def __init__(self, lines: int) -> None:
        super().__init__()
        self.lines = lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self.lines


class Folds:
    """What one conversation has folded: the entries hidden above (their lines kept by a
    `FoldedLines` before them), and the entries with folded parts."""

    def __init__(self, view: ScrollableContainer) -> None:
        self.view = view
        self._above: list[Widget] = []  # hidden entries, in order
        self._lines: FoldedLines | None = None  # their lines
        self._parted: list[Widget] = []  # entries with folded parts
        self._width = 0  # the width the folded heights were measured at
        # Unfolds not yet laid out: until the refresh after one, a part that held the lines of
        # others still has their height, and folding it again would count them twice.
        self._unsettled = 0

    @property
    def folded(self) -> bool:
        return bool(self._above or self._parted)

    async def fold(self, entries: Sequence[Widget]) -> bool:
        """Fold what of `entries` (the view's, in order, laid out) lies more than `KEEP_SCREENS`
        viewports above the end; heights add up from the end. False when put off: an unfold
        waits for its layout, and the caller passes again after the refresh (an unfold need not
        change the view's size, so no later change may bring the pass back)."""
        if self._unsettled or not all(laid_out(entry) for entry in entries if entry.display):
            return False
        view = self.view
        width = view.scrollable_content_region.width
        if width != self._width:
            self.unfold()
            self._width = width
        keep = KEEP_SCREENS * view.scrollable_content_region.height
        below = 0
        for index in range(len(entries) - 1, -1, -1):
            entry = entries[index]
            if not entry.display:
                return True  # hidden already, as is all before it
            if below >= keep:
                return await self._hide(entries[: index + 1], entries[index + 1])
            height = outer_height(entry)
            if below + height > keep and not self._fold_parts(entry, keep - below):
                return False
            below += height
        return True

    async def _hide(self, above: Sequence[Widget], first: Widget) -> bool:
        """Hide `above` (in order; those folded before are hidden already) and put a
        `FoldedLines` holding their lines before them: `first`, the first entry left, then stands
        where it stood (its top margin is kept, next to a widget with none). False when an
        unfold came while the lines mounted."""
        lines = first.virtual_region.y - first.styles.margin.top
        if lines <= 0:
            return True  # not laid out: its layout changes the view's size, which passes again
        view = self.view
        spacer = FoldedLines(lines)
        spacer.display = False
        await view.mount(spacer, before=0)
        if self._unsettled:  # unfolded meanwhile: `lines` is from before
            await spacer.remove()
            return False
        spacer.display = True
        hiding = [entry for entry in above if entry.display]
        for entry in hiding:
            entry.display = False
        self._above.extend(hiding)
        gone, self._lines = self._lines, spacer
        if gone is not None:
            gone.display = False
            if gone.parent is view:
                await gone.remove()
        return True

    def _fold_parts(self, entry: Widget, keep: int) -> bool:
        """Fold the parts of `entry` lying wholly more than `keep` lines above its bottom into
        the first of them; never its last, which a streaming reply writes into. False when put
        off: a part unfolded is not laid out yet."""
        shown = [child for child in entry.children if child.display]
        if len(shown) < 2:
            return True
        if not all(map(laid_out, shown)):
            return False
        *parts, live = shown
        below = outer_height(live)
        far = 0  # parts[:far] lie wholly beyond `keep`
        for index in range(len(parts) - 1, -1, -1):
            if below >= keep:
                far = index + 1
                break
            below += outer_height(parts[index])
        # a part with nothing to hide (a long reply's marker of parts not composed) stays
        far_parts = parts[:far]
        while far_parts and not far_parts[0].children:
            far_parts.pop(0)
        if not far_parts:
            return True
        head, *rest = far_parts
        if head not in _folded and not fold(head):
            return True
        if rest:
            take(head, rest)
        if entry not in self._parted:
            self._parted.append(entry)
        return True

    def unfold(self) -> None:
        """Everything folded shows again, as it stood."""
        if self.folded:
            self._unsettled += 1
            self.view.call_after_refresh(self._settled)
        above, self._above = self._above, []
        for entry in above:
            entry.display = True
        if self._lines is not None:
            self._lines.display = False
        parted, self._parted = self._parted, []
        for entry in parted:
            unfold_within(entry)

    def _settled(self) -> None:
        self._unsettled -= 1
