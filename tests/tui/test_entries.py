"""Entries a person works with: a focused entry copies its logical text, long tool output starts
collapsed and expands on Enter, one-line entries read as `trellis show` words them, and a reply
stands without a margin above its first block or below its last."""

from __future__ import annotations

import dataclasses

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Collapsible, Markdown
from textual.widgets.markdown import MarkdownBlock

from app.tui.widgets.entries import AssistantMessage, LineEntry, ToolCard, UserMessage
from app.tui.widgets.transcript_view import TranscriptView
from engine.events import AssistantMessage as AssistantPayload
from engine.events import StepEnd, StepStart, TurnEnd, TurnStart
from engine.events import UserMessage as UserPayload
from engine.session import Session
from replay.entries import AssistantEntry, GcEntry, RetryEntry
from replay.transcript import Transcript, transcript_of
from replay.wording import gc_line, retry_line
from tests.bench.store import make_events
from tests.tui.test_streaming import HEADINGS


class EntriesApp(App[None]):
    """One stored turn (a prompt and two tool steps of 40 output lines each), nothing else."""

    def __init__(self, transcript: Transcript) -> None:
        super().__init__()
        self.transcript = transcript

    def compose(self) -> ComposeResult:
        yield TranscriptView(self.transcript)


def one_turn() -> Transcript:
    return transcript_of(make_events(13))


async def test_a_focused_entry_copies_its_logical_text() -> None:
    app = EntriesApp(one_turn())
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        user = app.query_one(UserMessage)
        user.focus()
        await pilot.press("c")
        assert app.clipboard == "Please look at module 1 and fix the tests."
        card = app.query(ToolCard).first()
        card.focus()
        await pilot.press("c")
        assert app.clipboard.endswith("x = 1\n" * 40)  # the whole result, not the collapsed view


async def test_long_tool_output_starts_collapsed_and_expands_on_enter() -> None:
    app = EntriesApp(one_turn())
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        card = app.query(ToolCard).first()

        def lines() -> list[str]:
            return str(card.render()).splitlines()

        assert len(lines()) == 13
        assert "… 28 more lines (Enter expands)" in lines()
        card.focus()
        await pilot.press("enter")
        assert lines() == ["x = 1"] * 40
        await pilot.press("enter")
        assert len(lines()) == 13


def test_one_line_entries_read_as_trellis_show_words_them() -> None:
    gc = GcEntry(
        key="gc:1",
        seq=1,
        areas=("watch#2",),
        earliest=0,
        reclaimed=(3, 4),
        promoted=(),
        carried=(5,),
    )
    retry = RetryEntry(key="retry:1", seq=2, turn=1, step=1, attempt=2, reason="timeout")
    assert LineEntry(gc).copy_text == f"♻ {gc_line(gc)}"
    assert LineEntry(retry).copy_text == f"↻ {retry_line(retry)}"


async def test_entries_mount_no_more_widgets_than_they_show() -> None:
    """Every mounted widget costs each frame's layout: a user message and a tool card draw their
    text themselves, and a reply without reasoning has no reasoning widget."""
    app = EntriesApp(one_turn())
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert not app.query_one(UserMessage).children
        assert all(not card.children for card in app.query(ToolCard))
        replies = list(app.query(AssistantMessage))
        assert replies
        assert not any(reply.query(Collapsible) for reply in replies)


def a_reply(content: str) -> Transcript:
    session = Session("reply")
    session.append(TurnStart(turn=1))
    session.append(UserPayload(content="plan it"))
    session.append(StepStart(turn=1, step=1, prefix_digest="ab" * 32))
    session.append(AssistantPayload(turn=1, step=1, content=content))
    session.append(StepEnd(turn=1, step=1))
    session.append(TurnEnd(turn=1, reason="completed"))
    return transcript_of(list(session.held))


async def test_a_reply_that_opens_with_a_heading_has_no_gap_above_it() -> None:
    """The entry's own spacing stands above a reply; a heading's top margin (2 lines) on top of
    it had left three blank lines after a tool card. Later headings keep theirs."""
    app = EntriesApp(a_reply("## Plan\n\nFirst.\n\n## Then\n\nSecond."))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        reply = app.query_one(AssistantMessage)
        first, then = [b for b in reply.query(MarkdownBlock) if isinstance(b, HEADINGS)]
        assert (first.styles.margin.top, first.styles.margin.bottom) == (0, 1)
        assert then.styles.margin.top == 2
        assert first.region.y == reply.content_region.y


@pytest.mark.parametrize(
    ("content", "margins"),
    [
        ("Text.\n\n> quoted", [(0, 1), (1, 0)]),
        ("Text.\n\n```\ncode\n```", [(0, 1), (1, 0)]),
        ("```\ncode\n```\n\nAfter.", [(0, 1), (0, 0)]),
        ("Text.\n\n## End", [(0, 1), (2, 0)]),
        ("### Start\n\nText.\n\n### End", [(0, 1), (0, 1), (1, 0)]),
        ("## Only", [(0, 0)]),
    ],
)
async def test_a_reply_drops_the_margin_above_its_first_block_and_below_its_last_only(
    content: str, margins: list[tuple[int, int]]
) -> None:
    """(top, bottom) of each block: the last keeps its top margin (the rule that dropped its
    bottom one had dropped every side, a heading or a fence at the end stood closer to the text
    above it than in the middle)."""
    app = EntriesApp(a_reply(content))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        reply = app.query_one(AssistantMessage)
        blocks = [b for b in reply.query(MarkdownBlock) if isinstance(b.parent, Markdown)]
        assert [(b.styles.margin.top, b.styles.margin.bottom) for b in blocks] == margins


async def test_a_reply_taken_off_the_screen_mid_write_stops_writing() -> None:
    """Text that streams in while the reply's Markdown is being removed (a cancelled turn's entry
    redrawn) ends the writer quietly; it had failed the app with `NoMatches` under load."""
    app = EntriesApp(a_reply("First."))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        reply = app.query_one(AssistantMessage)
        await reply.query_children(Markdown).remove()
        entry = reply.entry
        assert isinstance(entry, AssistantEntry)
        reply.show(dataclasses.replace(entry, content="First. Then more."))
        await pilot.pause()
        await pilot.pause()
        assert app.return_code is None  # the app did not fail
        assert not reply.query_children(Markdown)
