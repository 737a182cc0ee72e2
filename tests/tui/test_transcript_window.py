"""The transcript's window of mounted entries under bursts: entries added and trimmed before Textual
has mounted them (a resumed session applied event by event, a fast replay) never crash the view, and
the window ends holding exactly the newest entries."""

from __future__ import annotations

from textual.app import App, ComposeResult

from app.tui.widgets.transcript_view import TranscriptView
from replay.transcript import Transcript
from tests.bench.store import make_events

WINDOW = 12


class WindowApp(App[None]):
    """Only the transcript view, with a small window."""

    def __init__(self) -> None:
        super().__init__()
        self.transcript = Transcript()

    def compose(self) -> ComposeResult:
        yield TranscriptView(self.transcript, window=WINDOW)


async def test_a_burst_of_more_entries_than_the_window_mounts_the_newest_without_crashing() -> None:
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(TranscriptView)
        for event in make_events(13 * 20):  # every event applied before any widget mounts
            change = app.transcript.apply(event)
            if change:
                view.apply(change)
        await pilot.pause()
        await pilot.pause()
        keys = [entry.key for entry in app.transcript.entries]
        assert [w.key for w in view.entry_widgets()] == keys[-WINDOW:]
        assert all(w.is_mounted for w in view.entry_widgets())
