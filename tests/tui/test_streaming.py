"""A long streamed reply: its finished blocks are sealed apart from the live Markdown, and the reply
stands on screen exactly as the same reply written at once (Pilot, on the scripted model)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.dom import DOMNode
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownBlock

from app.tui.widgets.entries import SEAL_BLOCKS, AssistantMessage
from engine.gateway.scripted import Reply
from replay.entries import AssistantEntry
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle

HEADINGS = tuple(Markdown.BLOCKS[f"h{level}"] for level in range(1, 7))
"""Textual's heading blocks, by the block names its `Markdown` builds them for."""
PARAGRAPH = Markdown.BLOCKS["paragraph_open"]


def long_reply(paragraphs: int = 40) -> str:
    """Paragraphs with a heading, a list and a fence now and then (blocks with margins of their
    own), so sealing meets every kind of block."""
    blocks: list[str] = []
    for n in range(paragraphs):
        if n % 9 == 4:
            blocks.append(f"## Part {n}")
        elif n % 7 == 3:
            blocks.append("\n".join(f"- item {n}.{i}" for i in range(3)))
        elif n % 11 == 6:
            blocks.append(f"```\ncode {n}\n```")
        blocks.append(f"Paragraph {n} says a few words about the code, long enough to wrap.")
    return "\n\n".join(blocks)


def layout_of(reply: AssistantMessage) -> list[tuple[int, str, int]]:
    """Each block's line within the reply, its kind and its height: where the reader sees it,
    whatever Markdown widgets hold the blocks."""
    rows: list[tuple[int, str, int]] = []
    for block in reply.query(MarkdownBlock):
        if not isinstance(block.parent, Markdown):
            continue  # a block inside a list or a quote moves with its parent
        y = 0
        node: Widget | None = block
        while node is not None and node is not reply:
            y += node.virtual_region.y
            node = node.parent if isinstance(node.parent, Widget) else None
        rows.append((y, type(block).__name__, block.outer_size.height))
    return rows


async def caught_up(app: ConsoleTestApp, reply: AssistantMessage) -> None:
    for _ in range(200):  # the writer catches up with the stream
        if reply.shown_text == reply.copy_text:
            break
        await app.workers.wait_for_complete()
    assert reply.shown_text == reply.copy_text


async def test_a_long_streamed_reply_seals_its_finished_blocks(workspace: Path, data: Path) -> None:
    text = long_reply()
    app = ConsoleTestApp(workspace, data, [Reply(text=text, chunk_delay=0.0005)])
    async with app.run_test(size=(100, 200)) as pilot:
        await pilot.pause()
        await send(app, pilot, "go")
        await settle(app, pilot)
        reply = app.main.query_one(AssistantMessage)
        await caught_up(app, reply)
        await pilot.pause()
        chunks = list(reply.query_children(Markdown))
        assert len(chunks) > 1  # sealed Markdown widgets before the live one
        live = chunks[-1].query_children(MarkdownBlock)
        assert len(live) <= SEAL_BLOCKS + 1
        streamed, height = layout_of(reply), reply.outer_size.height
        session_id = app.live.session_id

    again = ConsoleTestApp(workspace, data, [], session_id=session_id)
    async with again.run_test(size=(100, 200)) as pilot:
        await pilot.pause()
        reply = again.main.query_one(AssistantMessage)
        await caught_up(again, reply)
        await pilot.pause()
        assert len(reply.query_children(Markdown)) == 1  # a stored reply is written at once
        assert layout_of(reply) == streamed
        assert reply.outer_size.height == height


async def test_a_reply_with_reasoning_shows_it_collapsed(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(
        workspace, data, [Reply(text="The answer.", reasoning="Weighing it up.", chunk_delay=0)]
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await send(app, pilot, "go")
        await settle(app, pilot)
        reply = app.main.query_one(AssistantMessage)
        reasoning = reply.query_one("#reasoning", Collapsible)
        assert reasoning.collapsed
        assert reasoning.display
        assert str(reply.query_one("#reasoning-text", Static).render()) == "Weighing it up."
        assert reply.children[-1] is reply.query_children(Markdown).last()  # above the words


class ReplyApp(App[None]):
    """One streaming reply, fed by hand: each write of the test is what the writer gets at once."""

    def compose(self) -> ComposeResult:
        yield AssistantMessage(AssistantEntry(key="a", seq=1, turn=1, step=1, streaming=True))


async def write_cut_at_blank_lines(app: ReplyApp, pilot: Pilot[None], text: str) -> None:
    """`text` streamed into the reply cut after every blank line: each write ends with one,
    sealing included."""
    cuts = [i + 2 for i in range(len(text)) if text.startswith("\n\n", i)]
    reply = app.query_one(AssistantMessage)
    for cut in [*cuts, len(text)]:
        reply.show(AssistantEntry(key="a", seq=1, turn=1, step=1, content=text[:cut]))
        await app.workers.wait_for_complete()
        await pilot.pause()


async def test_writes_that_end_with_a_blank_line_lose_no_block() -> None:
    text = long_reply()
    app = ReplyApp()
    async with app.run_test(size=(100, 200)) as pilot:
        await write_cut_at_blank_lines(app, pilot, text)
        reply = app.query_one(AssistantMessage)
        assert reply.shown_text == text
        assert len(reply.query_children(Markdown)) > 1  # some blocks were sealed
        paragraphs = [
            "".join(block.parent.source.splitlines()[slice(*block.source_range)])
            for block in reply.query(PARAGRAPH)
            if isinstance(block.parent, Markdown)
        ]
        assert paragraphs == [line for line in text.split("\n\n") if line.startswith("Paragraph")]


async def test_the_text_shown_is_a_prefix_of_the_reply_even_mid_seal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = long_reply()
    app = ReplyApp()
    seen: list[str] = []
    append = Markdown.append

    async def watched(markdown: Markdown, fragment: str) -> None:
        await append(markdown, fragment)
        seen.append(app.query_one(AssistantMessage).shown_text)  # as a reader sees it then

    monkeypatch.setattr(Markdown, "append", watched)
    async with app.run_test(size=(100, 200)) as pilot:
        await write_cut_at_blank_lines(app, pilot, text)
        assert len(app.query_one(AssistantMessage).query_children(Markdown)) > 1  # sealed some
    assert seen
    assert [s for s in seen if not text.startswith(s)] == []


async def test_only_the_replys_last_block_drops_its_margin_and_seals_restyle_nothing_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last block stands without a bottom margin, as the same reply settled; marking it
    restyles only the blocks that change (an order pseudo-class restyled every sealed Markdown,
    and every block in each, at each seal)."""
    restyled: list[DOMNode] = []
    update_node_styles = DOMNode.update_node_styles

    def counted(node: DOMNode, animate: bool = True) -> None:
        restyled.append(node)
        update_node_styles(node, animate)

    monkeypatch.setattr(DOMNode, "update_node_styles", counted)
    text = long_reply()
    app = ReplyApp()
    async with app.run_test(size=(100, 200)) as pilot:
        await write_cut_at_blank_lines(app, pilot, text)
        reply = app.query_one(AssistantMessage)
        *sealed, live = reply.query_children(Markdown)
        assert len(sealed) > 3
        assert not [node for node in restyled if isinstance(node, Markdown)]
        blocks = [b for b in reply.query(MarkdownBlock) if isinstance(b.parent, Markdown)]
        assert [b for b in blocks if b.styles.margin.bottom == 0] == [blocks[-1]]
        assert blocks[-1].parent is live


async def test_a_running_turn_keeps_its_sealed_reply_out_of_the_collector_until_it_ends(
    workspace: Path, data: Path
) -> None:
    """The collector's full passes walked every widget of a long reply about once a second
    (0.4 s a pass by 100 KB, inside frames); while the turn runs its sealed chunks are frozen,
    and when it ends nothing stays frozen."""
    gc.unfreeze()
    app = ConsoleTestApp(workspace, data, [Reply(text=long_reply(80), chunk_delay=0.002)])
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await send(app, pilot, "go")
        sealed: list[Markdown] = []
        for _ in range(500):
            replies = app.main.query(AssistantMessage)
            sealed = list(replies.first().query_children(Markdown))[:-1] if replies else []
            if sealed or not app.live.turn_open:
                break
            await pilot.pause(0.01)
        assert sealed, "a chunk was sealed"
        assert app.live.turn_open, "while the turn ran"
        assert gc.get_freeze_count() > 0
        assert not any(o is sealed[0] for o in gc.get_objects()), "the sealed chunk is frozen"
        await settle(app, pilot)
        assert gc.get_freeze_count() == 0


async def test_a_streamed_reply_that_opens_with_a_heading_has_no_gap_above_it() -> None:
    """Its first heading has no top margin, as in a finished reply; later headings keep theirs;
    a first block that changes as text streams (a paragraph, then a heading) is marked again,
    and the reply stands as the same text written at once."""
    text = "## Plan\n\nFirst paragraph.\n\n## Then\n\nSecond paragraph."
    app = ReplyApp()
    async with app.run_test(size=(100, 40)) as pilot:
        reply = app.query_one(AssistantMessage)
        reply.show(AssistantEntry(key="a", seq=1, turn=1, step=1, content="Plan"))
        await app.workers.wait_for_complete()
        await pilot.pause()
        await write_cut_at_blank_lines(app, pilot, text)
        assert reply.shown_text == text
        first, then = [b for b in reply.query(MarkdownBlock) if isinstance(b, HEADINGS)]
        assert (first.styles.margin.top, first.styles.margin.bottom) == (0, 1)
        assert then.styles.margin.top == 2
        streamed = layout_of(reply)
    settled = ReplyApp()
    async with settled.run_test(size=(100, 40)) as pilot:
        reply = settled.query_one(AssistantMessage)
        reply.show(AssistantEntry(key="a", seq=1, turn=1, step=1, content=text))
        await settled.workers.wait_for_complete()
        await pilot.pause()
        assert layout_of(reply) == streamed
