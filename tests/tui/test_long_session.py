"""Long sessions in the console: a resumed session opens at its end from a range read, only a bounded
window of entries is mounted, older ones load (from the store) as the user scrolls up and newer ones
as the user comes back down, only the pages around the window are held, Home goes to turn 1 and End
to the live tail, and a streaming reply never moves a view the user scrolled up (Pilot, on the
scripted model)."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.scrollbar import ScrollTo

from app.tui.scrollback import SPARE_PAGES, TAIL_TURNS
from app.tui.widgets.entries import AssistantMessage
from app.tui.widgets.transcript_view import WINDOW, TranscriptView
from engine.events import TurnStart
from engine.gateway.scripted import Reply
from engine.store.sqlite.store import SQLiteStore
from replay.transcript import TurnEntry, transcript_of
from tests.bench.store import make_events
from tests.tui.conftest import ConsoleTestApp

TURN_EVENTS = 13  # make_events writes turns of a prompt and two tool steps
ENTRIES_PER_TURN = 6  # a rule, the prompt, and two replies with a tool card each


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
        assert any(w.key == "turn:300" for w in mounted)
        assert view.scroll_y == view.max_scroll_y, "the view opens at the end"
        assert mounted[-1].region.overlaps(view.region), "the last turn's end is on screen"


async def resumed(data: Path, workspace: Path, turns: int, reply: str) -> ConsoleTestApp:
    """The console on a stored session of `turns` turns, the model scripted to answer `reply`."""
    session_id = await stored_turns(data, workspace, turns)
    return ConsoleTestApp(workspace, data, [Reply(text=reply)], session_id=session_id)


async def settle(app: ConsoleTestApp, pilot: Pilot[None]) -> None:
    await pilot.wait_for_scheduled_animations()
    await app.workers.wait_for_complete(app.workers)
    await pilot.pause()
    await pilot.pause()


def small_window(view: TranscriptView) -> int:
    """A window of 30 entries, 15 mounted per step and pages of 5 turns (30 entries), so a hundred
    turns take many pages; returns the entries that may be held: the live tail and the pages that
    the window spans (at most three), with one spare page either side."""
    view.window, view.page, view.held.turns = 30, 15, 5
    return view.transcript.count + (3 + 2 * SPARE_PAGES) * 5 * ENTRIES_PER_TURN


async def test_paging_up_to_turn_1_and_down_to_the_live_tail_holds_a_bounded_window(
    workspace: Path, data: Path
) -> None:
    app = await resumed(data, workspace, 100, "The live reply after scrolling.")
    async with app.run_test(size=(100, 40)) as pilot:
        view = await opened(app, pilot)
        keys = await whole_log_keys(app)
        bound = small_window(view)
        assert bound < len(keys) // 2
        view.focus()
        seen: list[str] = [w.key for w in view.entry_widgets()]
        held: list[int] = []
        for _ in range(200):  # up: the scrollbar dragged to the top, a page at a time
            top = view.entry_widgets()[0]
            # where it stands once the view is at the top: first in a stream layout, at its top
            # margin (read from its style: while the view follows the end it may be folded away,
            # with no region, until the view moves)
            margin = top.styles.margin.top
            if view.scroll_y > 0:
                view.post_message(ScrollTo(y=0, animate=False))  # reaching the top loads a page
            else:
                await pilot.press("up")  # already at the top: scrolling up loads a page
            await settle(app, pilot)
            held.append(view.held.count)
            shown = view.entry_widgets()
            if shown[0] is top:
                break  # nothing older: the session's start is on screen
            # the entry at the top when the page loaded is still where it was
            assert top.virtual_region.y - view.scroll_y == margin, "loading older moved the view"
            seen = [w.key for w in shown if w.key not in seen] + seen
        assert view.at_start
        mounted = [w.key for w in view.entry_widgets()]
        assert len(mounted) <= view.window, "the window held while scrolling up"
        assert mounted == keys[: len(mounted)], "turn 1's entries, in order"
        assert seen == keys, "every entry was shown, in order"
        assert max(held) <= bound, "pages far below the view were dropped"
        for _ in range(200):  # down: the scrollbar dragged to the bottom
            view.post_message(ScrollTo(y=view.max_scroll_y, animate=False))
            await settle(app, pilot)
            held.append(view.held.count)
            if view.at_end:
                break
        assert view.at_end
        mounted = [w.key for w in view.entry_widgets()]
        assert len(mounted) <= view.window
        assert mounted == keys[-len(mounted) :], "back at the live tail"
        assert max(held) <= bound, "pages far above the view were dropped"
        await pilot.press("end")
        await settle(app, pilot)
        app.live.send("one more")
        await app.live.when_idle()
        await settle(app, pilot)
        replies = [w for w in view.entry_widgets() if isinstance(w, AssistantMessage)]
        assert replies[-1].copy_text == "The live reply after scrolling."
        assert view.scroll_y == view.max_scroll_y, "the view follows the live end again"


async def test_home_shows_turn_1_and_end_the_live_tail(workspace: Path, data: Path) -> None:
    app = await resumed(data, workspace, 200, "Streamed while the user read turn 1.")
    async with app.run_test(size=(100, 30)) as pilot:
        view = await opened(app, pilot)
        keys = await whole_log_keys(app)
        bound = small_window(view)
        view.focus()
        await pilot.press("home")
        await settle(app, pilot)
        mounted = [w.key for w in view.entry_widgets()]
        assert mounted[0] == "turn:1"
        assert view.scroll_y == 0
        assert mounted == keys[: len(mounted)], "turn 1's entries, in order"
        assert view.held.count <= bound, "the pages between turn 1 and the end are not held"
        # a reply streamed meanwhile is not mounted and does not move the view
        app.live.send("while I read")
        await app.live.when_idle()
        await settle(app, pilot)
        assert [w.key for w in view.entry_widgets()] == mounted
        assert view.scroll_y == 0
        await pilot.press("end")
        await settle(app, pilot)
        assert view.at_end
        assert view.scroll_y == view.max_scroll_y
        replies = [w for w in view.entry_widgets() if isinstance(w, AssistantMessage)]
        assert replies[-1].copy_text == "Streamed while the user read turn 1."
        live = [entry.key for entry in view.transcript.entries]
        assert [w.key for w in view.entry_widgets()] == live[-len(view.entry_widgets()) :]


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
