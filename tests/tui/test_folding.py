"""While the conversation follows its end, what lies far above the viewport is folded (frames lay
out only what is near the viewport), line for line, and shows again before the view can move."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.containers import Container, ScrollableContainer
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static
from textual.widgets.markdown import MarkdownBlock

from app.tui.widgets.entries import AssistantMessage, EntryWidget
from app.tui.widgets.folding import Folds
from app.tui.widgets.transcript_view import TranscriptView
from engine.gateway.scripted import Reply
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_long_session import opened, stored_turns
from tests.tui.test_streaming import caught_up, layout_of, long_reply
from tests.waiting import until


def shown(widget: Widget) -> bool:
    """Displayed, and so is every widget it lies in."""
    return all(node.display for node in (widget, *widget.ancestors) if isinstance(node, Widget))


def folded_most(blocks: Sequence[Widget]) -> Callable[[], bool]:
    return lambda: sum(map(shown, blocks)) < len(blocks) // 3


def hidden(widget: Widget) -> Callable[[], bool]:
    return lambda: not shown(widget)


def shown_children(widget: Widget) -> list[Widget]:
    return [child for child in widget.children if child.display]


async def test_a_long_reply_folds_what_lies_far_above_and_unfolds_before_the_view_moves(
    workspace: Path, data: Path
) -> None:
    session_id = await stored_turns(data, workspace, 8)
    text = long_reply(120)
    app = ConsoleTestApp(
        workspace, data, [Reply(text=text, chunk_delay=0.0005)], session_id=session_id
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "go")
        await settle(app, pilot)
        reply = [w for w in app.main.query(AssistantMessage) if w.copy_text == text][-1]
        await caught_up(app, reply)
        view = app.main.query_one(TranscriptView)
        blocks = list(reply.query(MarkdownBlock))
        await until(folded_most(blocks), "the blocks far above are folded", pilot=pilot)
        entries = view.entry_widgets()
        assert not all(map(shown, entries)), "so are the entries above the reply"
        assert shown(blocks[-1])
        folded = [part for part in reply.children if part.display and not any(shown_children(part))]
        assert len(folded) == 1, "the far parts of the reply are one widget, however many"
        assert [part for part in reply.children if not part.display], "the others are hidden"
        assert view.scroll_y == view.max_scroll_y
        folded_height = view.virtual_size.height

        view.focus()
        await pilot.press("pageup")  # the user scrolls: everything shows again first
        await pilot.pause()
        assert all(map(shown, blocks))
        assert all(map(shown, view.entry_widgets()))
        assert view.virtual_size.height == folded_height, "folding kept every line"
        unfolded = layout_of(reply)
        reply_height = reply.outer_size.height
        session_id = app.live.session_id

    again = ConsoleTestApp(workspace, data, [], session_id=session_id)
    async with again.run_test(size=(100, 30)) as pilot:
        view = await opened(again, pilot)
        reply = [w for w in view.entry_widgets() if isinstance(w, AssistantMessage)][-1]
        await pilot.pause()
        assert layout_of(reply) == unfolded, "unfolded, the reply stands as one written at once"
        assert reply.outer_size.height == reply_height


async def replied_long(
    app: ConsoleTestApp, pilot: Pilot[None]
) -> tuple[TranscriptView, EntryWidget]:
    """A long reply to a prompt in a new session, caught up: the view and its first entry,
    folded away above it."""
    await pilot.pause()
    await send(app, pilot, "go")
    await settle(app, pilot)
    await caught_up(app, app.main.query_one(AssistantMessage))
    view = app.main.query_one(TranscriptView)
    first = view.entry_widgets()[0]
    await until(hidden(first), "the first entry is folded", pilot=pilot)
    return view, first


async def test_an_entry_folded_above_unfolds_when_it_takes_focus(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text=long_reply(120), chunk_delay=0.0005)])
    async with app.run_test(size=(100, 30)) as pilot:
        view, first = await replied_long(app, pilot)
        first.focus()
        await pilot.pause()
        assert shown(first)
        assert all(shown(block) for block in view.query(MarkdownBlock))


async def test_a_fold_pass_due_while_the_widgets_change_runs_once_they_have(
    workspace: Path, data: Path
) -> None:
    """A pass that falls while a flush or a page holds the widgets is put off, not dropped:
    nothing else would bring it back once the reply stops growing."""
    app = ConsoleTestApp(workspace, data, [Reply(text=long_reply(120), chunk_delay=0.0005)])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await send(app, pilot, "go")
        await settle(app, pilot)
        reply = app.main.query_one(AssistantMessage)
        await caught_up(app, reply)
        view = app.main.query_one(TranscriptView)
        blocks = list(reply.query(MarkdownBlock))
        view._folds.unfold()
        await pilot.pause()
        assert all(map(shown, blocks))
        async with view._changing:  # as a flush does while it mounts
            await view._fold_above()
            await pilot.pause()
            assert all(map(shown, blocks)), "nothing folds under the flush"
        await until(folded_most(blocks), "the pass ran after it", pilot=pilot)


async def test_an_entry_folded_above_that_changes_folds_again(workspace: Path, data: Path) -> None:
    """A folded entry that changes unfolds everything (its new height is not in the folded
    lines); when its height stays, no size changes, and the pass that folds again is asked for,
    not left to a later change of size that may never come."""
    app = ConsoleTestApp(workspace, data, [Reply(text=long_reply(120), chunk_delay=0.0005)])
    async with app.run_test(size=(100, 30)) as pilot:
        view, first = await replied_long(app, pilot)
        height = view.virtual_size.height
        entry = view.transcript.get(first.key)
        assert entry is not None
        view.apply(view.transcript._replace(copy.copy(entry)))  # as an event that updates it
        await until(lambda: first.entry is not entry, "the flush showed the change", pilot=pilot)
        await until(hidden(first), "folded again", pilot=pilot)
        await pilot.pause()
        assert view.virtual_size.height == height, (
            "every line once: the reply's folded part was laid out first"
        )


class Entry(Container):
    DEFAULT_CSS = "Entry { height: auto; }"


class PartsApp(App[None]):
    """One entry of forty parts of five lines in a scrolling view."""

    def compose(self) -> ComposeResult:
        with ScrollableContainer(), Entry():
            for i in range(40):
                with Entry():
                    yield Static("\n".join(f"part {i} line {j}" for j in range(5)))


async def test_a_fold_pass_before_an_unfold_is_laid_out_counts_no_line_twice() -> None:
    """Until the unfold is laid out, the part that held the others' lines is as tall as all of
    them: a pass then would count them twice (a stretch of blank lines while following)."""
    app = PartsApp()
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        view = app.query_one(ScrollableContainer)
        entry = app.query_one(ScrollableContainer).query_children(Entry).first()
        full = view.virtual_size.height
        folds = Folds(view)
        await folds.fold([entry])
        await pilot.pause()
        assert 1 < len(shown_children(entry)) < 20, "the far parts are one"
        assert view.virtual_size.height == full
        folds.unfold()
        await folds.fold([entry])  # before the unfold is laid out
        await pilot.pause()
        assert view.virtual_size.height == full
        await folds.fold([entry])
        await pilot.pause()
        assert len(shown_children(entry)) < 20, "a later pass folds"
        assert view.virtual_size.height == full


class StreamApp(App[None]):
    """Entries of five lines in a view laid out as a stream, as the conversation is."""

    CSS = "ScrollableContainer { layout: stream; }"

    def compose(self) -> ComposeResult:
        with ScrollableContainer():
            for i in range(20):
                yield Static("\n".join(f"entry {i} line {j}" for j in range(5)))


async def test_a_fold_pass_after_an_unfold_waits_for_the_entries_it_showed_to_be_laid_out() -> None:
    """The refresh after an unfold need not have laid out the entries it showed (each asks the
    screen for a layout on its own idle). A pass in between hid them with lines the view still
    held: the conversation grew by a reply's length, and a page up from the end went ten."""
    app = StreamApp()
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        view = app.query_one(ScrollableContainer)
        entries = list(view.query_children(Static))
        full = view.virtual_size.height
        folds = Folds(view)
        assert await folds.fold(entries)
        await pilot.pause()
        assert not all(map(shown, entries))
        folds.unfold()
        folds._unsettled -= 1  # as though its refresh had come, but not its layout...
        assert not await folds.fold(entries), "put off"
        folds._unsettled += 1  # ...which the refresh it asked for brings
        await pilot.pause()
        assert all(map(shown, entries))
        assert view.virtual_size.height == full
        assert await folds.fold(entries)
        await pilot.pause()
        assert not all(map(shown, entries))
        assert view.virtual_size.height == full


async def test_the_folded_lines_hold_when_the_view_is_laid_out_before_their_own_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stream layout reuses a child's last placement unless that child has asked the screen
    for a layout; under load the view was once laid out between the folded lines growing and
    their request reaching the screen, and they kept their old height for good (the extent
    short by a whole reply). Here every fold pass is followed by that layout."""
    original = Folds._hide

    async def hide_then_lay_out_early(folds: Folds, above: Sequence[Widget], first: Widget) -> None:
        await original(folds, above, first)
        view = folds.view
        for child in view.children:  # the folded lines and the entries hidden ask the screen
            child._check_refresh()  # for a layout: their requests are queued...
        screen = view.screen
        screen._layout_widgets.setdefault(view, set()).add(view.children[-1])
        screen._refresh_layout()  # ...and another child's layout runs first

    monkeypatch.setattr(Folds, "_hide", hide_then_lay_out_early)
    app = StreamApp()
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        view = app.query_one(ScrollableContainer)
        folds = Folds(view)
        for more in range(3):
            await view.mount(Static("\n".join(f"more {more} line {j}" for j in range(30))))
            await pilot.pause()
            full = view.virtual_size.height
            await folds.fold(list(view.query_children(Static)))
            await pilot.pause()
            await pilot.pause()
            assert view.virtual_size.height == full, f"after fold pass {more + 1}"
        assert sum(not child.display for child in view.query_children(Static)) > 20
