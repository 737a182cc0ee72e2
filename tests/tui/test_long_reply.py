"""A long finished reply is composed a part at a time: the part the view comes to, then the parts
near it as the user scrolls, what they read kept still; composed, it stands line for line as in
one piece."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from textual.pilot import Pilot
from textual.widgets.markdown import MarkdownBlock

from app.tui.widgets.entries import AssistantMessage
from app.tui.widgets.settled import settled_parts
from app.tui.widgets.transcript_view import TranscriptView
from engine.events import AssistantMessage as AssistantEvent
from engine.events import Event
from engine.store.sqlite.store import SQLiteStore
from tests.bench.store import make_events
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_folding import shown
from tests.tui.test_long_session import TURN_EVENTS, opened
from tests.tui.test_streaming import HEADINGS, layout_of, long_reply

LONG = "## A long reply\n\n" + long_reply(170)
"""Some 13,000 characters: a heading first, then paragraphs, headings, lists and fences."""


def opens_with_a_flush_heading(message: AssistantMessage) -> bool:
    """Its first block is a heading without a top margin, whichever part was composed last."""
    first = message.query(MarkdownBlock).first()
    return isinstance(first, HEADINGS) and first.styles.margin.top == 0


BLOCKS = st.sampled_from(
    [
        "A paragraph of a few words.",
        "A paragraph\nof two lines.",
        "## A heading",
        "A setext heading\n================",
        "- one\n- two",
        "1. first\n2. second",
        "```\ncode\n\nafter a blank line in the fence\n```",
        "~~~~\n```\nnot a fence's end\n~~~~",
        "> quoted\n> twice",
        "a | b\n--|--\n1 | 2",
        "    indented code",
        "Not a heading\n--",
        "***",
    ]
)


def top_level(source: str) -> list[str]:
    return [token.type for token in MarkdownIt("gfm-like").parse(source) if token.level == 0]


@given(st.lists(BLOCKS, min_size=1, max_size=40), st.integers(min_value=1, max_value=200))
def test_parts_keep_the_text_and_every_block_as_it_was(blocks: list[str], size: int) -> None:
    source = "\n\n".join(blocks) + "\n"
    parts = settled_parts(source, size, least=0)
    assert "".join(parts) == source
    assert [kind for part in parts for kind in top_level(part)] == top_level(source)
    for part in parts[1:]:
        assert top_level(part)[0] == "paragraph_open", "a part starts with a plain paragraph"


def test_short_replies_and_those_that_cannot_be_cut_are_one_part() -> None:
    assert settled_parts(long_reply(40)) == [long_reply(40)], "most replies are short"
    assert len(settled_parts(LONG)) > 5
    with_reference = LONG + "\n\n[docs]: https://example.org\n"
    assert settled_parts(with_reference) == [with_reference], "a later part may use the link"


async def session_with(data: Path, workspace: Path, turns: int, *, long_in_turn: int) -> str:
    """A stored session of `turns` turns whose turn `long_in_turn` first answers with `LONG`."""
    events: list[Event] = make_events(turns * TURN_EVENTS)
    index = next(
        i
        for i, e in enumerate(events)
        if isinstance(e.data, AssistantEvent) and e.data.turn == long_in_turn
    )
    event = events[index]
    events[index] = event.model_copy(
        update={"data": event.data.model_copy(update={"content": LONG})}
    )
    async with SQLiteStore(data / "sessions.sqlite") as store:
        info = await store.create(cwd=str(workspace))
        await store.append(info.id, events)
        await store.flush(info.id)
        return info.id


def long_message(view: TranscriptView) -> AssistantMessage:
    return next(
        w for w in view.entry_widgets() if isinstance(w, AssistantMessage) and w.copy_text == LONG
    )


async def settled(app: ConsoleTestApp, pilot: Pilot[None]) -> None:
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def one_piece_layout(workspace: Path, data: Path) -> list[tuple[int, str, int]]:
    """`LONG` composed whole, at the width the tests use."""
    session_id = await session_with(data, workspace, 1, long_in_turn=1)
    app = ConsoleTestApp(workspace, data, [], session_id=session_id)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await opened(app, pilot)
        message = long_message(view)
        while message.deferred:
            await message.compose_next(message.deferred[0])
        view.release_anchor()  # and what was folded above unfolds
        await settled(app, pilot)
        return layout_of(message)


async def test_a_resumed_long_reply_composes_its_end_then_its_parts_as_the_user_scrolls_up(
    workspace: Path, data: Path
) -> None:
    expected = await one_piece_layout(workspace, data)
    session_id = await session_with(data, workspace, 1, long_in_turn=1)
    app = ConsoleTestApp(workspace, data, [], session_id=session_id)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await opened(app, pilot)
        await settled(app, pilot)
        message = long_message(view)
        (marker,) = message.deferred
        assert marker.above
        composed = len(message.query(MarkdownBlock))
        assert composed < len(expected) // 4, "only the end and a screen above it are composed"
        assert view.scroll_y == view.max_scroll_y, "the view opens at the end"
        page = view.scrollable_content_region.height
        for _ in range(400):
            if not message.deferred and view.scroll_y == 0:
                break
            blocks = [
                b
                for b in message.query(MarkdownBlock)
                if shown(b) and b.region.y >= view.region.y  # a folded block's region is old
            ]
            before = blocks[0].region.y if blocks else 0
            top = view.scroll_y
            await pilot.press("pageup")
            await settled(app, pilot)
            if blocks and top >= page:  # a page up: what was read is a page lower, parts or not
                assert blocks[0].region.y == before + page
        assert not message.deferred
        assert message.shown_text == LONG
        assert opens_with_a_flush_heading(message)
        assert layout_of(message) == expected, "line for line as in one piece"


async def test_from_the_start_a_long_reply_composes_its_first_part_then_those_below(
    workspace: Path, data: Path
) -> None:
    expected = await one_piece_layout(workspace, data)
    session_id = await session_with(data, workspace, 40, long_in_turn=1)
    app = ConsoleTestApp(workspace, data, [], session_id=session_id)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await opened(app, pilot)
        assert not any(
            isinstance(w, AssistantMessage) and w.copy_text == LONG for w in view.entry_widgets()
        ), "turn 1 lies beyond the window"
        view.action_scroll_home()
        await settled(app, pilot)
        message = long_message(view)
        (marker,) = message.deferred
        assert not marker.above
        assert len(message.query(MarkdownBlock)) < len(expected) // 4
        for _ in range(400):
            if not message.deferred:
                break
            view.action_page_down()
            await settled(app, pilot)
        assert not message.deferred
        assert message.shown_text == LONG
        assert opens_with_a_flush_heading(message)
        assert layout_of(message) == expected
