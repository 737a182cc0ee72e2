"""Long sessions in the console: a resumed session opens at its end from a range read, only a bounded
window of entries is mounted, older ones load (from the store) as the user scrolls up, and a
streaming reply never moves a view the user scrolled up (Pilot, on the scripted model)."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from app.tui.scrollback import TAIL_TURNS
from app.tui.widgets.entries import AssistantMessage
from app.tui.widgets.transcript_view import WINDOW, TranscriptView
from engine.events import TurnStart
from engine.gateway.scripted import Reply
from engine.store.sqlite import SQLiteStore
from replay.transcript import TurnEntry, transcript_of
from tests.bench.store import make_events
from tests.tui.conftest import ConsoleTestApp

TURN_EVENTS = 13  # make_events writes turns of a prompt and two tool steps


async def stored_turns(data: Path, workspace: Path, turns: int) -> str:
    """A session of `turns` turns written straight to the store (no model run)."""
    events = make_events(turns * TURN_EVENTS)
    assert sum(isinstance(e.data, TurnStart) for e in events) == turns
    async with SQLiteStore(data / "sessions.sqlite") as store:
        info = await store.create(cwd=str(workspace))
        await store.append(info.id, events)
        await store.flush(info.id)
        return info.id


async def opened(app: ConsoleTestApp, pilot: Pilot[None]) -> TranscriptView:
    for _ in range(1000):
        if app.agent is not None and len(app.screen_stack) > 1:
            break
        await pilot.pause(0.01)
    await pilot.pause()
    return app.main.query_one(TranscriptView)


async def whole_log_keys(app: ConsoleTestApp) -> list[str]:
    """The entries of the whole log projected at once (the Agent's log: the stored events and
    the model binding it appended on opening, read by range)."""
    return [entry.key for entry in transcript_of(await app.live.read_log()).entries]


async def test_a_resumed_long_session_shows_its_last_turn_and_mounts_at_most_the_window(
    workspace: Path, data: Path
) -> None:
    session_id = await stored_turns(data, workspace, 300)
    app = ConsoleTestApp(workspace, data, [], session_id=session_id)
    async with app.run_test(size=(100, 30)) as pilot:
        view = await opened(app, pilot)
        mounted = view.entry_widgets()
        assert 0 < len(mounted) <= WINDOW
        # only the tail was read and projected, not the 300 turns
        numbers = [e.number for e in view.transcript.entries if isinstance(e, TurnEntry)]
        assert numbers == list(range(300 - TAIL_TURNS + 1, 301))
        keys = await whole_log_keys(app)
        assert [w.key for w in mounted] == keys[-len(mounted) :]
        last_turn = next(w for w in mounted if w.key == "turn:300")
        assert view.scroll_y == view.max_scroll_y, "the view opens at the end"
        assert last_turn.region.height > 0, "the last turn is on screen"


async def test_scrolling_to_the_top_loads_older_entries_in_order(
    workspace: Path, data: Path
) -> None:
    session_id = await stored_turns(data, workspace, 60)
    app = ConsoleTestApp(workspace, data, [], session_id=session_id)
    async with app.run_test(size=(100, 30)) as pilot:
        view = await opened(app, pilot)
        keys = await whole_log_keys(app)
        view.focus()
        seen: list[str] = [w.key for w in view.entry_widgets()]
        for _ in range(100):
            top = view.entry_widgets()[0]
            margin = top.virtual_region.y  # where it stands in the viewport at the top
            await pilot.press("home")
            await pilot.wait_for_scheduled_animations()
            await app.workers.wait_for_complete(app.workers)
            await pilot.pause()
            await pilot.pause()
            shown = view.entry_widgets()
            if shown[0] is top:
                break  # nothing older: the session's start is on screen
            # the entry that was at the top when the page loaded is still at the top
            assert top.virtual_region.y - view.scroll_y == margin, "loading older moved the view"
            seen = [w.key for w in shown if w.key not in seen] + seen
        assert view.at_start
        mounted = [w.key for w in view.entry_widgets()]
        assert len(mounted) <= WINDOW, "the window held while scrolling up"
        assert mounted == keys[: len(mounted)]
        assert [e.key for e in view.transcript.entries] == keys
        assert seen == keys, "every entry was shown, in order"


async def test_scrolling_up_during_a_streaming_reply_keeps_the_view_still(
    workspace: Path, data: Path
) -> None:
    session_id = await stored_turns(data, workspace, 30)
    text = "\n\n".join(f"Paragraph {n} of a long answer, streamed word by word." for n in range(80))
    app = ConsoleTestApp(
        workspace, data, [Reply(text=text, chunk_delay=0.004)], session_id=session_id
    )
    async with app.run_test(size=(100, 30)) as pilot:
        view = await opened(app, pilot)
        app.live.send("tell me a lot")
        for _ in range(1000):
            replies = [w for w in app.main.query(AssistantMessage) if w.copy_text.startswith("Par")]
            if replies and len(replies[-1].copy_text) > 200:
                break
            await pilot.pause(0.01)
        view.focus()
        await pilot.press("pageup")
        await pilot.pause()
        still = view.scroll_y
        first = view.entry_widgets()[0]
        shown_at = first.virtual_region.y
        grown = view.max_scroll_y
        reply = replies[-1]
        before = len(reply.copy_text)
        for _ in range(1000):
            if len(reply.copy_text) > before + 500 and view.max_scroll_y > grown:
                break
            await pilot.pause(0.01)
        assert len(reply.copy_text) > before + 500, "the reply went on streaming"
        assert view.max_scroll_y > grown, "the transcript grew below the view"
        assert view.scroll_y == still, "streaming moved the view the user scrolled up"
        assert first.virtual_region.y == shown_at
        await app.live.when_idle()
        await pilot.pause()
        assert reply.copy_text == text
