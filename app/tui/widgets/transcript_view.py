"""The conversation: a window of entry widgets over a `replay.transcript.Transcript` and the stored
pages before it (`app.tui.scrollback.Scrollback`).

Live and replay feed it the same projection. At most `window` entries are mounted, a contiguous run
of the entries held: scrolling to the top mounts older ones (reading the page before from the store
when none is held) and unmounts the newest beyond the window; scrolling to the bottom mounts newer
ones (reading the page after, once dropped) and unmounts the oldest. Pages far from the window are
dropped, so memory stays bounded both ways; Home goes to the session's first page, End to the live
end. While the user reads scrollback, new text never moves the view: the view follows the end only
while it is anchored there, and mounting or unmounting above the viewport keeps what the user reads
where it was.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from textual import events, work
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.widget import AwaitMount, Widget

from app.tui.scrollback import Scrollback
from app.tui.widgets.entries import AssistantMessage, EntryWidget, LongEntry, widget_for
from app.tui.widgets.folding import Folds, laid_out
from app.tui.widgets.settled import Deferred
from replay.transcript import Change, Transcript

WINDOW = 120
"""Entries mounted at most; older ones load as the user scrolls up."""
PAGE = 40
"""Entries mounted per step of scrolling past either end of the window."""
MAX_PUT_OFF = 50
"""Fold passes put off in a row, each to the next refresh, before the view waits for a change of
size instead: an unfold's layout comes within a few, and a part never laid out must not keep the
loop spinning."""
LAYOUT_REFRESHES = 10
"""Refreshes a page load waits, at most, for an unfolded entry's layout before reading where it
stands (a part never laid out reads as it is)."""


@dataclass(slots=True)
class _Pending:
    """The changes recorded since the last flush, by key (dicts keep the order of arrival)."""

    added: dict[str, None] = field(default_factory=dict)
    updated: dict[str, None] = field(default_factory=dict)
    removed: dict[str, None] = field(default_factory=dict)
    rebuild: bool = False

    def note(self, change: Change) -> None:
        for key in change.removed:
            self.added.pop(key, None)  # added and removed within one batch: never mounted
            self.removed[key] = None
        for key in change.added:
            self.added[key] = None  # removed then added again: a new widget replaces the old
        self.updated.update(dict.fromkeys(change.updated))


class TranscriptView(VerticalScroll):
    """Applies each `Change` of the transcript to its widgets."""

    DEFAULT_CSS = """
    TranscriptView {
        layout: stream;
        height: 1fr;
        padding: 0 1;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(
        self,
        transcript: Transcript,
        *,
        scrollback: Scrollback | None = None,
        window: int = WINDOW,
        page: int = PAGE,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.held = scrollback if scrollback is not None else Scrollback(transcript)
        self.held.live = transcript
        self.window = window
        self.page = page
        self._widgets: dict[str, EntryWidget] = {}
        # after a page mounts: the entry the user was reading and its offset in the viewport, kept
        # there while the new entries settle their heights (Markdown lays out after mounting),
        # until the user scrolls again
        self._hold: tuple[Widget, float] | None = None
        self._pending = _Pending()
        self._scheduled = False  # a flush is queued
        self._changing = asyncio.Lock()  # one flush or page changes the mounted widgets at a time
        self._paging = False  # a page is being loaded: scrolling further waits for it
        self._mounting: list[AwaitMount] = []  # mounts `apply` started, awaited by the next flush
        self._folds = Folds(self)
        self._size_seen = Size(0, 0)
        self._folding = False  # a fold pass is queued
        self._put_off = 0  # fold passes put off in a row

    def on_mount(self) -> None:
        self.anchor()
        self.rebuild()

    @property
    def transcript(self) -> Transcript:
        """The live projection (the replay screen swaps it when it seeks back)."""
        return self.held.live

    @transcript.setter
    def transcript(self, transcript: Transcript) -> None:
        self.held.live = transcript

    def _fill(self) -> None:
        """A resumed session's tail shorter than the viewport: load the page above it."""
        if self.max_scroll_y <= 0 and not self.at_start:
            self._load_older()
        self._compose_near()

    # --- where the window stands ---------------------------------------------------------------

    def entry_widgets(self) -> list[EntryWidget]:
        """The mounted entries, in reading order (not those being removed)."""
        widgets = self._widgets
        return [
            child
            for child in self.children
            if isinstance(child, EntryWidget) and widgets.get(child.key) is child
        ]

    @property
    def at_start(self) -> bool:
        """The session's first entry is mounted (nothing older to load)."""
        widgets = self.entry_widgets()
        held = self.held
        return held.at_session_start and (not widgets or held.index(widgets[0].key) == 0)

    @property
    def at_end(self) -> bool:
        """The live transcript's last entry is mounted."""
        widgets = self.entry_widgets()
        held = self.held
        return held.joined and (not widgets or held.index(widgets[-1].key) == held.count - 1)

    def _following(self) -> bool:
        """Anchored to the end and not released by the user scrolling away."""
        return self.is_anchored and not self._anchor_released

    # --- changes -------------------------------------------------------------------------------

    def rebuild(self) -> None:
        """Mount the newest `window` entries from scratch (a resumed or sought session)."""
        self._pending = _Pending()
        self._pending.rebuild = True
        self._schedule()

    def apply(self, change: Change) -> None:
        """Mount the entries the change adds at once (a tool card shows as its call starts) and
        record the rest; the widgets follow in one flush per batch of changes (`_flush`)."""
        pending = self._pending
        if self._changing.locked() or pending.added or pending.rebuild:
            pending.note(change)  # a flush or page is changing the widgets: after it, in order
        else:
            pending.note(change._replace(added=()))
            for key in change.added:
                if key in pending.removed or len(self._widgets) >= self.window + self.page:
                    pending.added[key] = None  # its old widget goes first / a burst: the flush
                elif (mounting := self._mount_added(key)) is not None:
                    self._mounting.append(mounting)
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            self.call_later(self._flush)

    async def _flush(self) -> None:
        """Bring the widgets up to date with every change recorded since the last flush.

        Flushes run one at a time (on this widget's message queue, under the lock pages take too),
        and each awaits the mounts begun since the last one and its own, so no widget is removed
        before Textual has mounted it (removing one whose mount is still queued left it composing
        children into a widget being pruned: the crash a burst of events caused). A burst larger than the window mounts only what the window keeps, and a
        streaming reply redraws once per batch of deltas, not once per delta."""
        self._scheduled = False
        async with self._changing:
            mounting, self._mounting = self._mounting, []
            await asyncio.gather(*mounting)  # removing a widget Textual has not mounted crashes
            pending, self._pending = self._pending, _Pending()
            if pending.rebuild or (self._following() and len(pending.added) >= self.window):
                await self._mount_newest()
                return
            gone = [self._widgets.pop(key) for key in pending.removed if key in self._widgets]
            if gone:
                await self.remove_children(gone)
            added = [self._mount_added(key) for key in self._in_order(pending.added)]
            await asyncio.gather(*(mount for mount in added if mount is not None))
            if added or mounting:
                await self._trim()
            for key in pending.updated:
                widget = self._widgets.get(key)
                entry = self.held.get(key)
                if widget is not None and entry is not None and widget.entry is not entry:
                    if not widget.display:
                        # its new height is not in the folded lines; the same height changes
                        # no size, so nothing else would fold again
                        self._folds.unfold()
                        self._fold_soon()
                    widget.show(entry)

    async def _mount_newest(self) -> None:
        """Replace whatever is mounted by the newest `window` entries (the stored pages go)."""
        self._folds.unfold()
        await self.remove_children()
        self._widgets.clear()
        held = self.held
        held.last()
        count = held.count
        widgets = [widget_for(e) for e in held.between(max(count - self.window, 0), count)]
        self._widgets = {widget.key: widget for widget in widgets}
        if widgets:
            await self.mount_all(widgets)
        self.anchor()
        self.call_after_refresh(self._fill)

    def _in_order(self, keys: Iterable[str]) -> list[str]:
        """The keys still in the transcript, in reading order."""
        held = self.held
        present = [key for key in keys if held.get(key) is not None]
        return sorted(present, key=held.index)

    def _mount_added(self, key: str) -> AwaitMount | None:
        """Mount a new entry beside a mounted neighbour (live entries come at the end); one with
        no mounted neighbour lies outside the window and mounts when the user scrolls there (as
        does a live entry while the pages held do not reach the live transcript)."""
        held = self.held
        entry = held.get(key)
        if entry is None or key in self._widgets:
            return None
        position = held.index(key)
        after = held.between(position + 1, position + 2)
        before = held.between(position - 1, position) if position else []
        widget = widget_for(entry)
        if after and after[0].key in self._widgets:
            mounted = self.mount(widget, before=self._widgets[after[0].key])
        elif before and before[0].key in self._widgets:
            mounted = self.mount(widget, after=self._widgets[before[0].key])
        elif not self._widgets:
            mounted = self.mount(widget)
        else:
            return None
        self._widgets[key] = widget
        return mounted

    async def _trim(self) -> None:
        """Keep the window bounded: while following the end the oldest go; while the user reads
        scrollback, the newest (below the viewport) go, so nothing moves."""
        widgets = self.entry_widgets()
        extra = len(widgets) - self.window
        if extra <= 0:
            return
        gone = widgets[:extra] if self._following() else widgets[-extra:]
        self._folds.unfold()  # the folded lines counted those going
        await self._unmount(gone)

    # --- scrolling past either end -------------------------------------------------------------

    def _older_if_at_top(self) -> None:
        """Already at the top, scrolling up does not move the view: load older entries instead."""
        if self.scroll_y <= 0:
            self._load_older()

    def _newer_if_at_bottom(self) -> None:
        if self.scroll_y >= self.max_scroll_y:
            self._load_newer()

    def on_mouse_scroll_up(self) -> None:
        self._hold = None
        self._older_if_at_top()

    def on_mouse_scroll_down(self) -> None:
        self._hold = None
        self._newer_if_at_bottom()
        self.call_after_refresh(self._follow_if_at_end)

    def on_scroll_to(self) -> None:
        self._hold = None  # the scrollbar dragged

    def action_scroll_up(self) -> None:
        self.on_mouse_scroll_up()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self.on_mouse_scroll_up()
        self._page(-1)

    def action_scroll_home(self) -> None:
        """To the session's first entry (read from the store when its page is not held)."""
        self._hold = None
        if self.at_start:
            super().action_scroll_home()
        else:
            self._go_to_start()

    def action_scroll_down(self) -> None:
        self.on_mouse_scroll_down()
        super().action_scroll_down()
        self.call_after_refresh(self._follow_if_at_end)

    def action_page_down(self) -> None:
        self.on_mouse_scroll_down()
        self._page(1)
        self._follow_if_at_end()

    def _follow_if_at_end(self) -> None:
        """At the bottom of the live end, follow it again. Textual re-anchors only when a scroll
        moves the view there: a scroll that finds it there already (a second PageDown, the
        wheel at the bottom) left the anchor released, and the view stood still as a reply
        streamed on below it."""
        if self.at_end and self.scroll_y >= self.max_scroll_y and not self._following():
            self.scroll_end(animate=False, immediate=True)

    def _page(self, pages: int) -> None:
        """Scroll `pages` pages from where the last one took the view. Textual's own page reads
        the position when pressed and scrolls after the next refresh (or animates there), so a
        burst of presses (a held key, or a terminal that sends them together) moved one page."""
        height = self.scrollable_content_region.height
        self.scroll_to(y=self.scroll_target_y + pages * height, animate=False, immediate=True)

    def action_scroll_end(self) -> None:
        """To the live end, following it again."""
        self._hold = None
        if self.at_end:
            super().action_scroll_end()
        else:
            self.rebuild()

    def watch_scroll_y(self, old: float, new: float) -> None:
        following = self._following()  # a view that follows the end moves with layout, not the user
        super().watch_scroll_y(old, new)
        if following:
            return
        if new <= 0 < old:
            self._load_older()
        elif new >= self.max_scroll_y and new > old and not self.at_end:
            self._load_newer()
        self._compose_near()

    # --- the parts of long replies not composed yet (app.tui.widgets.settled) ------------------

    def _deferred_near(self) -> tuple[AssistantMessage, Deferred] | None:
        """A marker of parts not composed yet within a viewport of the one on screen."""
        height = self.scrollable_content_region.height
        top, bottom = self.scroll_y - height, self.scroll_y + 2 * height
        for widget in self.entry_widgets():
            region = widget.virtual_region
            if region.bottom < top or region.y > bottom or not isinstance(widget, AssistantMessage):
                continue
            for marker in widget.deferred:
                if top <= (region.y if marker.above else region.bottom) <= bottom:
                    return widget, marker
        return None

    def _compose_near(self) -> None:
        if not self._paging and self._deferred_near() is not None:
            self._compose_deferred()

    @work(group="scrollback", exclusive=False)
    async def _compose_deferred(self) -> None:
        """Compose the next part of a long reply the view has come near; while the user reads
        scrollback, what they read stays where it is (a part composed above pushes it down)."""
        if self._paging:
            return
        self._paging = True
        try:
            async with self._changing:
                near = self._deferred_near()
                if near is None:
                    return
                message, marker = near
                keep = marker.above and not self._following()
                if keep:
                    self.release_anchor()
                    siblings = list(message.children)
                    reference = siblings[siblings.index(marker) + 1]
                    offset = self._view_y(reference) - self.scroll_y
                await message.compose_next(marker)
                if keep:
                    self._hold = (reference, offset)
        finally:
            self._paging = False
        self.call_after_refresh(self._restore if keep else self._compose_near)

    @work(group="scrollback", exclusive=False)
    async def _load_older(self) -> None:
        """Mount up to `page` entries above the window, reading the page before from the store
        when fewer are held; the newest beyond the window go."""
        if self._paging:
            return
        self._paging = True
        try:
            async with self._changing:
                held = self.held
                widgets = self.entry_widgets()
                first = held.index(widgets[0].key) if widgets else held.count
                if first < self.page:
                    first += await held.older()
                if first <= 0:
                    return
                older = [widget_for(e) for e in held.between(max(first - self.page, 0), first)]
                await self._keeping_still(older, before=widgets[0] if widgets else None)
        finally:
            self._paging = False

    @work(group="scrollback", exclusive=False)
    async def _load_newer(self) -> None:
        """Mount up to `page` entries below the window, reading the page after from the store when
        fewer are held; the oldest beyond the window go."""
        if self._paging or self.at_end:
            return
        self._paging = True
        try:
            async with self._changing:
                held = self.held
                widgets = self.entry_widgets()
                last = held.index(widgets[-1].key)
                if held.count - last - 1 < self.page:
                    await held.newer()
                newer = [
                    widget_for(e, from_start=True)
                    for e in held.between(last + 1, last + 1 + self.page)
                ]
                await self._keeping_still(newer, before=None)
        finally:
            self._paging = False

    @work(group="scrollback", exclusive=False)
    async def _go_to_start(self) -> None:
        """Home: the session's first page in place of the window, its first entry at the top."""
        if self._paging:
            return
        self._paging = True
        try:
            async with self._changing:
                await self.held.first()
                self.release_anchor()
                await self.remove_children()
                self._widgets.clear()
                widgets = [
                    widget_for(e, from_start=True) for e in self.held.between(0, 2 * self.page)
                ]
                self._widgets = {widget.key: widget for widget in widgets}
                if widgets:
                    await self.mount_all(widgets)
                    self.held.keep_around(widgets[0].key, widgets[-1].key)
                self.scroll_home(animate=False, immediate=True)
        finally:
            self._paging = False

    async def _unmount(self, gone: list[EntryWidget]) -> None:
        """Unmount `gone`, and drop the stored pages far from what stays mounted."""
        for widget in gone:
            self._widgets.pop(widget.key, None)
        await self.remove_children(gone)
        shown = self.entry_widgets()
        if shown:
            self.held.keep_around(shown[0].key, shown[-1].key)

    async def _keeping_still(self, fresh: list[EntryWidget], *, before: EntryWidget | None) -> None:
        """Mount `fresh` at the top (before `before`) or the bottom, unmount what the window no
        longer holds at the other end, and scroll so that what the user reads stays in place."""
        if not fresh:
            return
        self.release_anchor()
        shown = self.entry_widgets()
        reference = before if before is not None else shown[-1]
        await self._until_laid_out(reference)
        offset = self._view_y(reference) - self.scroll_y
        for widget in fresh:
            self._widgets[widget.key] = widget
        with self.app.batch_update():  # one layout for the page, not one per step
            if before is not None:
                await self.mount_all(fresh, before=before)
            else:
                await self.mount_all(fresh)
            extra = len(shown) + len(fresh) - self.window
            if extra > 0:
                await self._unmount(shown[-extra:] if before is not None else shown[:extra])
        self._hold = (reference, offset)
        self.call_after_refresh(self._restore)

    async def _until_laid_out(self, widget: Widget) -> None:
        """Wait for the layout that follows an unfold (a few refreshes at most): until then a
        widget that was folded stands where the fold left it, and an offset read from it put the
        page's first entry a margin off where the user saw it."""
        for _ in range(LAYOUT_REFRESHES):
            if laid_out(widget) or not widget.is_mounted:
                return
            refreshed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.call_after_refresh(refreshed.set_result, None)
            await refreshed

    def watch_virtual_size(self) -> None:
        if self._hold is not None:
            self.call_after_refresh(self._restore)
        self._fold_soon()

    # --- folding what lies far above the viewport (app.tui.widgets.folding) ---------------------

    def _fold_soon(self) -> None:
        """A fold pass after the next refresh, while the view follows the end (one queued)."""
        if self._following() and not self._folding:
            self._folding = True
            self.call_after_refresh(self._fold_above)

    async def _fold_above(self) -> None:
        """A pass that cannot run now is put off to the next refresh, never dropped: a dropped
        pass had no later change of size to bring it back once the reply stopped growing, and
        what lay far above stayed laid out."""
        self._folding = False
        if not self._following():
            return
        if self._changing.locked():
            # a flush or a page is changing the widgets: pass after it (not by waiting on the
            # lock, which would hold the app's queue the flush's mounts need)
            self._fold_soon()
            return
        if await self._folds.fold(self.entry_widgets()):
            self._put_off = 0
        elif self._put_off < MAX_PUT_OFF:  # an unfold waits for its layout
            self._put_off += 1
            self._fold_soon()

    def release_anchor(self) -> None:
        """The user moves the view (Textual releases the anchor for every scroll the user makes,
        and the view for each page it loads): everything folded shows again first."""
        self._folds.unfold()
        super().release_anchor()

    def on_resize(self, event: events.Resize) -> None:
        if event.size != self._size_seen:  # not only the content's size
            self._size_seen = event.size
            self._folds.unfold()  # folded heights hold for one width; the next pass folds again

    def reveal(self, key: str) -> None:
        """Expand and focus the entry with `key` (focus scrolls it into view), once the changes
        applied so far are mounted: the replay's diff at its position."""
        self.call_later(self._reveal, key)  # after the flush `apply` queued, on the same queue

    def _reveal(self, key: str) -> None:
        widget = self._widgets.get(key)
        if widget is None or not widget.is_mounted:
            return  # outside the window: the user scrolled away from the position
        if isinstance(widget, LongEntry):
            widget.expanded = True
        widget.focus()

    def on_descendant_focus(self) -> None:
        self._folds.unfold()  # an entry that takes focus is scrolled into view

    def _restore(self) -> None:
        """Scroll so that the held entry stands where it stood when the page was loaded."""
        if self._hold is None:
            return
        reference, offset = self._hold
        if not reference.is_mounted:
            self._hold = None
            return
        self.scroll_to(y=self._view_y(reference) - offset, animate=False, immediate=True)
        self._compose_near()

    def _view_y(self, widget: Widget) -> int:
        """Where `widget` (an entry, or a widget in one) stands in the conversation's lines: a
        widget's virtual region is relative to its container."""
        y = 0
        node: Widget | None = widget
        while node is not None and node is not self:
            y += node.virtual_region.y
            parent = node.parent
            node = parent if isinstance(parent, Widget) else None
        return y
