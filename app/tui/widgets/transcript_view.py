"""The conversation: a window of entry widgets over a `replay.transcript.Transcript`.

Live and replay feed it the same projection. Only the newest `window` entries are mounted; scrolling
to the top mounts older ones. While the user reads scrollback, new text never moves the view: the
view follows the end only while it is anchored there.
"""

from __future__ import annotations

from textual.containers import VerticalScroll

from app.tui.widgets.entries import EntryWidget, widget_for
from replay.transcript import Change, Transcript

WINDOW = 200
"""Entries mounted at most; older ones load as the user scrolls up."""
PAGE = 50


class TranscriptView(VerticalScroll):
    """Applies each `Change` of the transcript to its widgets."""

    DEFAULT_CSS = """
    TranscriptView {
        height: 1fr;
        padding: 0 1;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(
        self, transcript: Transcript, *, window: int = WINDOW, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.transcript = transcript
        self.window = window
        self._widgets: dict[str, EntryWidget] = {}
        self._first = 0  # position in the transcript of the first mounted entry

    def on_mount(self) -> None:
        self.anchor()
        self.rebuild()

    def rebuild(self) -> None:
        """Mount the newest `window` entries from scratch (a resumed or sought session)."""
        self.remove_children()
        self._widgets.clear()
        entries = self.transcript.entries
        self._first = max(len(entries) - self.window, 0)
        widgets = [widget_for(entry) for entry in entries[self._first :]]
        for widget in widgets:
            self._widgets[widget.key] = widget
        if widgets:
            self.mount_all(widgets)
        self.anchor()

    def apply(self, change: Change) -> None:
        """Mount, update and remove exactly the entries the change names."""
        for key in change.removed:
            widget = self._widgets.pop(key, None)
            if widget is not None:
                widget.remove()
        if change.added:
            order = [entry.key for entry in self.transcript.entries]
            for key in change.added:
                entry = self.transcript.get(key)
                if entry is None:
                    continue
                position = order.index(key)
                if position < self._first:
                    continue  # older than the window: it loads when the user scrolls there
                widget = widget_for(entry)
                after = next(
                    (self._widgets[k] for k in order[position + 1 :] if k in self._widgets), None
                )
                self._widgets[key] = widget
                if after is not None:
                    self.mount(widget, before=after)
                else:
                    self.mount(widget)
            self._trim()
        for key in change.updated:
            widget = self._widgets.get(key)
            entry = self.transcript.get(key)
            if widget is None or entry is None:
                continue
            if widget.is_mounted:
                widget.show(entry)
            else:
                widget.entry = entry  # shown when it mounts

    def _trim(self) -> None:
        """Keep the window bounded while following the end; reading scrollback keeps everything."""
        if not self.is_vertical_scroll_end and self.scroll_y > 0:
            return
        extra = len(self._widgets) - self.window
        if extra <= 0:
            return
        for key in list(self._widgets)[:extra]:
            self._widgets.pop(key).remove()
        self._first += extra

    def on_scroll_up(self) -> None:
        self._load_older()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new <= 0 and self._first > 0:
            self._load_older()

    def _load_older(self) -> None:
        if self._first <= 0:
            return
        entries = self.transcript.entries
        start = max(self._first - PAGE, 0)
        older = [widget_for(entry) for entry in entries[start : self._first]]
        first_mounted = next(iter(self._widgets.values()), None)
        fresh = {w.key: w for w in older}
        self._widgets = {**fresh, **self._widgets}
        self._first = start
        if first_mounted is not None:
            self.mount_all(older, before=first_mounted)
        else:
            self.mount_all(older)

    def entry_widgets(self) -> list[EntryWidget]:
        return list(self._widgets.values())
