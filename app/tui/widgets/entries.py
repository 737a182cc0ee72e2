"""One widget per kind of transcript entry; each takes the entry and updates itself from a newer one.

User words, injected context, assistant replies, tool cards, turn rules, and compact notes for Area
renders, collections, compaction, retries and errors are visually distinct, so injected context never
looks like the user's words. What the model, a tool or a file wrote is shown as written: it reaches
Textual as `Text` or `Content`, never as a string Textual would read as markup (`[x]`, `[/]`).
"""

from __future__ import annotations

import asyncio
import json
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.geometry import Size
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownBlock

from app.tui.widgets.folding import unfold_within
from app.tui.widgets.settled import (
    REPLY_END,
    REPLY_START,
    Deferred,
    SettledMarkdown,
    settled_parts,
)
from app.tui.widgets.status_line import compact_number
from engine.events import WorkspaceFileChange
from engine.gc_policy import turn_freeze
from engine.money import cost_text
from engine.rewind_report import files_summary
from engine.text_lines import first_line
from replay.entries import (
    AreaEntry,
    AssistantEntry,
    CheckpointsOffEntry,
    CommandEntry,
    CompactEntry,
    ContextEntry,
    ErrorEntry,
    GcEntry,
    ModeEntry,
    ModelEntry,
    RetryEntry,
    RewindEntry,
    ToolEntry,
    TranscriptEntry,
    TurnEndEntry,
    TurnEntry,
    UserEntry,
)
from replay.file_diff import change_diff, change_heading, file_diff, file_line
from replay.wording import (
    area_line,
    checkpoints_off_line,
    command_line,
    compact_line,
    gc_line,
    mode_line,
    model_line,
    retry_line,
    rewind_files,
    rewind_line,
    token_parts,
)

WRITE_EVERY_S = 1 / 15
"""A streaming reply is written into its Markdown at most this often (each write costs a layout of
the whole window; per delta, a fast stream outran the screen)."""
SEAL_BLOCKS = 12
"""A streaming reply's live Markdown holds about this many blocks; the finished ones before it are
sealed in Markdown widgets of their own that no later write touches (each write to a Markdown of
hundreds of blocks restyled and laid out all of them: the stream starved the keyboard)."""
COLLAPSE_LINES = 12
"""Tool output and injected context longer than this start collapsed."""
LINE_CHARS = 500
"""A tool card's title or a one-line note is cut here, wider than any terminal: the border or the
line's `text-overflow` cuts it again, with an ellipsis, to the width it has (a written file's
content can be megabytes)."""


ORIGINAL_CHARS = 70
"""How much of a rewritten prompt's original its entry quotes."""


class EntryWidget(Widget, can_focus=True):
    """Base: `show(entry)` renders the entry; `copy_text` is its logical text, what `c` copies
    from the focused entry (the words, not the screen's wrapping and borders)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("c", "copy", "Copy entry")]
    DEFAULT_CSS = """
    EntryWidget {
        height: auto;
        margin: 0 0 1 0;
    }
    EntryWidget:focus {
        background: $boost;
    }
    """

    def __init__(self, entry: TranscriptEntry) -> None:
        super().__init__(id=None)
        self.entry = entry
        self.key = entry.key

    def on_mount(self) -> None:
        self.show(self.entry)

    def action_copy(self) -> None:
        text = self.copy_text
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {len(text)} characters")

    def show(self, entry: TranscriptEntry) -> None:
        self.entry = entry

    @property
    def copy_text(self) -> str:
        return ""


class LineEntry(EntryWidget):
    """A compact one-line entry (turn rules, areas, collections, retries, errors, model)."""

    DEFAULT_CSS = """
    LineEntry {
        margin: 0;
    }
    LineEntry.turn-rule {
        margin: 1 0 0 0;
        color: $text-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    LineEntry.note {
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    LineEntry.error {
        color: $error;
        margin: 0 0 1 0;
    }
    LineEntry.turn-end {
        margin: 0 0 1 0;
    }
    LineEntry.note {
        color: $text-muted;
    }
    LineEntry.command {
        color: $text-muted;
        margin: 0 0 1 0;
    }
    LineEntry.rewind {
        margin: 1 0 1 0;
    }
    """

    def render(self) -> Text:
        entry = self.entry
        if isinstance(entry, TurnEntry):
            return turn_rule(entry, self.content_size.width)
        return self._text(entry)

    def show(self, entry: TranscriptEntry) -> None:
        super().show(entry)
        self.refresh(layout=True)

    @property
    def copy_text(self) -> str:
        return self._text(self.entry).plain

    @staticmethod
    def _text(entry: TranscriptEntry) -> Text:
        match entry:
            case TurnEntry():
                return turn_rule(entry)
            # worded as `trellis show` and the exports word them (replay.wording)
            case AreaEntry():
                return Text.assemble(
                    ("◇ ", "magenta"),
                    (area_line(entry), "magenta"),
                    (f" [{entry.earliest}..{entry.latest}]", "dim"),
                    "  ",
                    (
                        first_line(entry.messages[0].content, LINE_CHARS) if entry.messages else "",
                        "dim",
                    ),
                )
            case GcEntry():
                return Text.assemble(("♻ ", "green"), (gc_line(entry), "green"))
            case CompactEntry():
                return Text.assemble(
                    ("⊟ ", "yellow"),
                    compact_line(entry),
                    (f" — {first_line(entry.summary, LINE_CHARS)}" if entry.summary else "", "dim"),
                )
            case RetryEntry():
                return Text.assemble(("↻ ", "yellow"), retry_line(entry))
            case ErrorEntry():
                return Text.assemble(("✗ ", "bold red"), (entry.message, "red"))
            case TurnEndEntry():
                # the turn's rule names the reason; its words come after all the turn showed
                if entry.reason in ("cancelled", "disposed"):
                    return Text.assemble(("⊘ ", "bold yellow"), (entry.message, "yellow"))
                return Text.assemble(("✗ ", "bold red"), (entry.message, "red"))
            case ModelEntry():
                return Text(model_line(entry), style="dim")
            case ModeEntry():
                return Text.assemble(("⚑ ", "cyan"), (mode_line(entry), "dim"))
            case CommandEntry():
                # the answer as the command gave it, below the command (a plan is several lines)
                return Text.assemble(
                    ("» ", "cyan"), (command_line(entry), "bold"), "\n", entry.result
                )
            case RewindEntry():
                return rewind_text(entry)
            case CheckpointsOffEntry():
                return Text.assemble(("⚠ ", "bold yellow"), (checkpoints_off_line(entry), "yellow"))
            case _:
                return Text(type(entry).__name__)


def rewind_text(entry: RewindEntry) -> Text:
    """`⟲ Rewound to turn 3 (code and conversation), before: fix the bug`, and beneath it what
    the files' part did. The turns after it stay above: nothing leaves the transcript."""
    text = Text.assemble(("⟲ ", "bold cyan"), (rewind_line(entry), "bold"))
    if entry.prompt and entry.undoes is None:
        text.append(f", before: {first_line(entry.prompt, LINE_CHARS)}", style="dim")
    attention = entry.kept or entry.failed or entry.code_refused
    for line in rewind_files(entry):
        text.append("\n  ")
        text.append(line, style="yellow" if attention else "dim")
    return text


def files_text(files: tuple[WorkspaceFileChange, ...], expanded: bool, indent: str = "") -> Text:
    """What a turn or a command changed in the workspace: `2 files +3 -1`, a line per file, and
    each file's diff once expanded (one key away: Enter on the focused entry). Indents and gaps
    are segments of their own, unstyled: an SVG renderer that strips a text run's leading
    spaces (rsvg) then drops nothing that moves the words."""
    text = Text(indent)
    text.append(files_summary(files), style="bold")
    if not expanded:
        text.append("  ")
        text.append("(Enter shows the diffs)", style="dim")
    for change in files:
        text.append(f"\n{indent}  ")
        text.append(file_line(change), style=_FILE_STYLES[change.status])
        if expanded:
            for line in file_diff(change).splitlines():
                text.append(f"\n{indent}    ")
                text.append(line, style=_diff_style(line))
    return text


_FILE_STYLES = {"added": "green", "modified": "yellow", "deleted": "red"}


def turn_rule(entry: TurnEntry, width: int | None = None) -> Text:
    """`── turn 3 · completed · 2 steps · 3.4 s · 0.0042 USD · in 1.2k read 9.8k out 230 tok ──`,
    or `running` while it runs; the token parts come last, named as the status line names them,
    so a narrow line cuts them before the cost; in fewer than its cells (`width`), its dashes go
    first (the line never wraps: it is cut)."""
    parts = [f"turn {entry.number}"]
    if entry.status == "running":
        parts.append("running")
    else:
        parts.append("repaired (interrupted)" if entry.repaired else str(entry.reason))
    parts.append(f"{entry.steps} step{'s' if entry.steps != 1 else ''}")
    if entry.end is not None:
        parts.append(f"{entry.end - entry.start:.1f} s")
    if entry.cost:
        parts.append(cost_text(entry.cost))
    tokens = token_parts(entry.usage, compact_number, read="read", write="write", separator=" ")
    if tokens:
        parts.append(tokens)
    style = (
        "green" if entry.reason == "completed" else "yellow" if entry.status == "running" else "red"
    )
    label = " · ".join(parts)
    if width is not None and len(label) + 6 > width:
        return Text(label, style=style)
    return Text.assemble(("── ", "dim"), (label, style), (" ──", "dim"))


class UserMessage(EntryWidget):
    """The user's own words, with a rewritten prompt's original shown beneath (one widget, no
    children: every mounted widget costs each frame's layout)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"user-message--original"}
    DEFAULT_CSS = """
    UserMessage {
        border-left: thick $accent;
        padding: 0 1;
        background: $boost;
    }
    UserMessage > .user-message--original {
        color: $text-muted;
    }
    """

    def render(self) -> Text:
        entry = self.entry
        assert isinstance(entry, UserEntry)
        names = ", ".join(a.name for a in entry.attachments)
        notes = []
        if entry.original is not None:
            notes.append(
                f"rewritten by a prompt listener; originally: {first_line(entry.original, ORIGINAL_CHARS)}"
            )
        if names:
            notes.append(f"attached: {names}")
        text = Text(entry.content)
        if notes:
            text.append("\n")
            text.append(
                "\n".join(notes), style=self.get_component_rich_style("user-message--original")
            )
        return text

    def show(self, entry: TranscriptEntry) -> None:
        super().show(entry)
        self.refresh(layout=True)

    @property
    def copy_text(self) -> str:
        entry = self.entry
        return entry.content if isinstance(entry, UserEntry) else ""


def collapsed(text: str, expanded: bool) -> str:
    """Text longer than `COLLAPSE_LINES` lines as its first and last lines around a count of what
    is left out (all of it once expanded)."""
    lines = text.splitlines()
    if expanded or len(lines) <= COLLAPSE_LINES:
        return text
    half = COLLAPSE_LINES // 2
    hidden = len(lines) - 2 * half
    return "\n".join([*lines[:half], f"… {hidden} more lines (Enter expands)", *lines[-half:]])


class LongEntry(EntryWidget):
    """An entry whose text may be long: collapsed to `COLLAPSE_LINES` until expanded (Enter on the
    focused entry, or a click)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_expanded", "Expand / collapse")
    ]
    expanded: var[bool] = var(False)

    def watch_expanded(self) -> None:
        if self.is_mounted:
            self.show(self.entry)

    def action_toggle_expanded(self) -> None:
        self.expanded = not self.expanded

    def on_click(self) -> None:
        self.expanded = not self.expanded


class TurnRule(LineEntry, LongEntry):
    """A turn's rule and, once the turn changed files (`turn/changes`), the line that says how
    many, with each file's diff one key away (Enter). `LineEntry` comes first: Textual's CSS
    follows a class's first base only, so the rule is styled and queried as a `LineEntry`."""

    def render(self) -> Text:
        entry = self.entry
        assert isinstance(entry, TurnEntry)
        rule = turn_rule(entry, self.content_size.width)
        if entry.changes is None or not entry.changes.files:
            return rule
        return Text("\n").join([rule, files_text(entry.changes.files, self.expanded, "   ")])

    @property
    def copy_text(self) -> str:
        entry = self.entry
        assert isinstance(entry, TurnEntry)
        if entry.changes is None or not entry.changes.files:
            return turn_rule(entry).plain
        return f"{turn_rule(entry).plain}\n{files_text(entry.changes.files, True).plain}"


class ContextCard(LongEntry):
    """Injected context: a card titled with its source, never styled like the user's words."""

    DEFAULT_CSS = """
    ContextCard {
        border: round $secondary;
        border-title-color: $secondary;
        border-title-style: bold;
        padding: 0 1;
        color: $text-muted;
    }
    """

    def render(self) -> Text:
        entry = self.entry
        assert isinstance(entry, ContextEntry)
        return Text(collapsed(entry.content, self.expanded))

    def show(self, entry: TranscriptEntry) -> None:
        super().show(entry)
        assert isinstance(entry, ContextEntry)
        label = f" · {entry.label.cls.name}" if entry.label is not None else ""
        self.border_title = Content(f"Injected context · {entry.heading}{label}")
        self.refresh(layout=True)

    @property
    def copy_text(self) -> str:
        entry = self.entry
        return entry.content if isinstance(entry, ContextEntry) else ""


class AssistantMessage(EntryWidget):
    """A reply as streaming Markdown: appended text is parsed in batches (Markdown.append re-parses
    only the last block), into a live Markdown that holds only the last `SEAL_BLOCKS` or so blocks:
    the finished blocks before them are sealed in Markdown widgets no later write touches, so a
    write costs the same at the reply's end as at its start. Reasoning collapsed by default."""

    DEFAULT_CSS = """
    AssistantMessage {
        padding: 0 1;
    }
    AssistantMessage Collapsible {
        border: none;
        padding: 0;
        color: $text-muted;
    }
    AssistantMessage Markdown {
        margin: 0;
        padding: 0;
    }
    /* A reply's first and last blocks are marked by classes (`_mark_ends`): no margin above
       the first (the entry's own spacing stands there), none below the last. A Textual rule that
       sets one side of a margin sets the others to 0, so each rule gives all four, by kind. */
    AssistantMessage MarkdownBlock.-reply-end {
        margin: 0;
    }
    AssistantMessage MarkdownHeader.-reply-end {
        margin: 2 0 0 0;
    }
    AssistantMessage MarkdownH3.-reply-end, AssistantMessage MarkdownH4.-reply-end,
    AssistantMessage MarkdownH5.-reply-end, AssistantMessage MarkdownH6.-reply-end,
    AssistantMessage MarkdownFence.-reply-end, AssistantMessage MarkdownBlockQuote.-reply-end {
        margin: 1 0 0 0;
    }
    AssistantMessage MarkdownHeader.-reply-start, AssistantMessage MarkdownFence.-reply-start,
    AssistantMessage MarkdownBlockQuote.-reply-start {
        margin: 0 0 1 0;
    }
    AssistantMessage MarkdownBlock.-reply-start.-reply-end {
        margin: 0;
    }
    """

    def __init__(self, entry: TranscriptEntry, *, from_start: bool = False) -> None:
        super().__init__(entry)
        self._from_start = from_start  # a long finished reply composes its first part, not last
        self._wanted = ""  # the content the Markdown widgets must end up holding
        self._written = ""  # what the writer has put into them so far
        self._sealed = 0  # characters of `_written` in sealed Markdown widgets
        self._writing = False  # a `_write` worker runs
        self._reasoning: str | None = None  # the reasoning shown
        self._reasoning_text: Static | None = None  # its widget, once there is some
        self._start: Widget | None = None  # the block marked as the reply's first
        self._end: Widget | None = None  # the block marked as the reply's last
        self._parted = False  # a long finished reply, composed a part at a time

    def compose(self) -> ComposeResult:
        entry = self.entry
        if isinstance(entry, AssistantEntry) and not entry.streaming:
            # a finished reply parses once as it mounts: no writer worker, no paced rewrite (a
            # page of scrollback mounts dozens of them)
            self._wanted = self._written = entry.content
            parts = settled_parts(entry.content)
            self._parted = len(parts) > 1
            if len(parts) == 1:
                yield SettledMarkdown(entry.content, id="reply")
            elif self._from_start:
                yield SettledMarkdown(parts[0], end=False, id="reply")
                yield Deferred(parts[1:], above=False)
            else:
                yield Deferred(parts[:-1], above=True)
                yield SettledMarkdown(parts[-1], start=False, id="reply")
        else:
            yield Markdown(id="reply")

    @property
    def deferred(self) -> list[Deferred]:
        """The markers of the parts of a long finished reply not composed yet."""
        return list(self.query_children(Deferred))

    async def compose_next(self, marker: Deferred) -> SettledMarkdown:
        """Compose the part of `marker` nearest to those composed; the marker goes with the
        last."""
        source = marker.take()
        last = not marker.parts  # of those on its side: the reply's first above, its last below
        part = SettledMarkdown(source, start=marker.above and last, end=not marker.above and last)
        if marker.above:
            await self.mount(part, after=marker)
        else:
            await self.mount(part, before=marker)
        if not marker.parts:
            await marker.remove()
        return part

    def show(self, entry: TranscriptEntry) -> None:
        super().show(entry)
        assert isinstance(entry, AssistantEntry)
        if entry.reasoning != self._reasoning:  # each update lays the screen out again
            self._reasoning = entry.reasoning
            self._show_reasoning(entry.reasoning)
        self._wanted = entry.content
        if not self._writing and self._wanted != self._written:
            self._writing = True
            self.run_worker(self._write(), group="markdown")

    def _show_reasoning(self, reasoning: str) -> None:
        """The collapsed reasoning, mounted only for a reply that has some (most have none, and
        each widget costs every frame's layout)."""
        if self._reasoning_text is None:
            if not reasoning:
                return
            self._reasoning_text = Static(Text(reasoning), id="reasoning-text")
            self.mount(
                Collapsible(self._reasoning_text, title="reasoning", id="reasoning"),
                before=0,
            )
        else:
            self._reasoning_text.update(Text(reasoning))
        self.query_one("#reasoning", Collapsible).display = bool(reasoning)

    @property
    def shown_text(self) -> str:
        """The Markdown source the widgets hold, sealed and live (or composed and deferred), in
        order."""
        if self._parted:
            return "".join(
                "".join(child.parts) if isinstance(child, Deferred) else child.source
                for child in self.children
                if isinstance(child, Deferred | Markdown)
            )
        *sealed, live = self.query_children(Markdown)
        return self._written[: self._sealed] + live.source if sealed else live.source

    async def _write(self) -> None:
        """The one writer of the Markdown widgets while their text lags behind, so appends and
        rewrites never interleave: it appends what streamed since its last write (all of it in one
        append) to the live Markdown, or rewrites the reply when the text was withdrawn; it ends
        once the widgets are caught up."""
        try:
            while (wanted := self._wanted) != self._written:
                markdowns = self.query_children(Markdown)
                if not markdowns:
                    break  # the entry is being taken off the screen: nothing left to write to
                live = markdowns.last()
                if self._written and wanted.startswith(self._written):
                    await live.append(wanted[len(self._written) :])
                    self._written = wanted
                    await self._seal(live)
                else:
                    await self._rewrite(wanted)
                self._mark_ends()
                # each write lays the screen out again: what streams meanwhile waits for the next
                await asyncio.sleep(WRITE_EVERY_S)
        finally:
            self._writing = False

    def _mark_ends(self) -> None:
        """Mark the reply's first and last blocks by a class (a heading first has no top margin,
        the last block no bottom margin). An order pseudo-class (`:last-child`) made Textual
        restyle every displayed block of the live Markdown (and all each holds) whenever a block
        was mounted."""
        markdowns = list(self.query_children(Markdown))
        first = list(markdowns[0].query_children(MarkdownBlock)) if markdowns else []
        last = list(markdowns[-1].query_children(MarkdownBlock)) if markdowns else []
        self._start = _moved(self._start, first[0] if first else None, REPLY_START)
        self._end = _moved(self._end, last[-1] if last else None, REPLY_END)

    async def _rewrite(self, text: str) -> None:
        """The whole reply again (withdrawn text, or the first write), in one Markdown."""
        unfold_within(self)  # the first Markdown takes the whole reply again
        first, *later = self.query_children(Markdown)
        gone: list[Widget] = [*later, *self.deferred]
        with self.app.batch_update():
            if gone:
                await self.remove_children(gone)
            await first.update("")
            await first.append(text)  # see `_seal`: appends follow
        self._written, self._sealed, self._parted = text, 0, False

    async def _seal(self, live: Markdown) -> None:
        """Once the live Markdown holds more than `SEAL_BLOCKS` blocks and its last is a paragraph,
        its last block moves to a new live Markdown and the rest stays, sealed. Only a paragraph
        starts the new one: it has no top margin, so the blocks stand exactly as they stood in one
        Markdown (margins do not collapse across two)."""
        blocks = live.query_children(MarkdownBlock)
        last = blocks.last() if blocks else None
        paragraph = live.get_block_class("paragraph_open")
        if len(blocks) <= SEAL_BLOCKS or not isinstance(last, paragraph):
            return
        live_text = self._written[self._sealed :]
        lines = live_text.splitlines(keepends=True)
        head = "".join(lines[: last.source_range[0]])
        fresh = Markdown()
        with self.app.batch_update():  # no frame shows the block in neither
            await last.remove()
            await self.mount(fresh, after=live)
            # sealed from here on: while the append below runs, `shown_text` is a prefix of the
            # reply (the live block not yet in), never the reply with its sealed head skipped
            self._sealed += len(head)
            # `append`, not `update`: Textual's `update` sets where the next append re-parses
            # from past a trailing blank line (or inside a last block of several lines), so the
            # next append rewrote the last block with the following one, and a paragraph went
            # missing from the screen whenever a write ended with a blank line
            await fresh.append(live_text[len(head) :])
        turn_freeze.grown()  # the sealed chunk stays as long as the reply

    @property
    def copy_text(self) -> str:
        entry = self.entry
        return entry.content if isinstance(entry, AssistantEntry) else ""


_DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan", "(": "italic"}
"""A diff line's style by its first character."""


def _diff_style(line: str) -> str:
    if line.startswith(("--- ", "+++ ")):
        return "bold"
    return _DIFF_STYLES.get(line[:1], "")


TOOL_ICON = {"pending": "…", "running": "⟳", "done": "✓", "error": "✗", "cancelled": "⊘"}


def call_summary(entry: ToolEntry) -> str:
    """`read_file(path='a.py')`, or the raw argument text while the call is still streaming; one
    line of at most `LINE_CHARS` (the card's border cuts it to the width it has)."""
    if entry.status == "pending" and not entry.arguments:
        return f"{entry.name or 'tool'}({first_line(entry.raw_arguments, LINE_CHARS)})"
    shown = ", ".join(
        f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in entry.arguments.items()
    )
    return f"{entry.name}({first_line(shown, LINE_CHARS)})"


def tool_body(entry: ToolEntry) -> str:
    """What a tool card shows under its title: the result once there is one, else the output."""
    return (entry.result if entry.result is not None else entry.output).rstrip("\n")


class ToolCard(LongEntry):
    """A tool call from the moment the model starts it: arguments, running state, live output,
    result or error; long output starts collapsed."""

    DEFAULT_CSS = """
    ToolCard {
        border: round $primary 40%;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        padding: 0 1;
        height: auto;
    }
    ToolCard.-error {
        border: round $error;
    }
    ToolCard.-asking {
        border: round $warning;
    }

    ToolCard Collapsible {
        border: none;
        padding: 0;
    }
    """

    def render(self) -> Text:
        """The output or result, collapsed when long (no child widget: each costs every frame);
        under it the file change the call recorded, as a diff."""
        entry = self.entry
        assert isinstance(entry, ToolEntry)
        shown = collapsed(tool_body(entry), self.expanded)
        # a cancelled call's output is what the command printed, not an error it reported
        failed = entry.is_error and entry.status != "cancelled"
        text = Text(shown, style="red" if failed else "")
        if entry.change is not None:
            text.append(f"\n{change_heading(entry.change)}", style="dim")
            for line in collapsed(change_diff(entry.change), self.expanded).splitlines():
                text.append(f"\n{line}", style=_diff_style(line))
        if entry.files:  # what its batch changed, a command's or an MCP tool's
            text.append("\n" if shown else "")
            text.append_text(files_text(entry.files, self.expanded))
        return text

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """No output yet: the borders alone (an empty text would still take a line)."""
        entry = self.entry
        if isinstance(entry, ToolEntry) and not (tool_body(entry) or entry.files or entry.change):
            return 0
        return super().get_content_height(container, viewport, width)

    def show(self, entry: TranscriptEntry) -> None:
        super().show(entry)
        assert isinstance(entry, ToolEntry)
        status = entry.status
        if entry.asking:
            status_text = "waiting for permission"
        elif entry.permission in ("deny", "cancelled"):
            status_text = f"permission {entry.permission}"
        else:
            status_text = status
        self.border_title = Content(f"{TOOL_ICON.get(status, '')} {call_summary(entry)}")
        self.border_subtitle = Content(status_text)
        self.set_class((entry.is_error and status != "cancelled") or status == "error", "-error")
        self.set_class(entry.asking, "-asking")
        self.refresh(layout=True)

    @property
    def copy_text(self) -> str:
        entry = self.entry
        if not isinstance(entry, ToolEntry):
            return ""
        return f"{call_summary(entry)}\n{entry.result or entry.output}"


def widget_for(entry: TranscriptEntry, *, from_start: bool = False) -> EntryWidget:
    """The widget of `entry`; `from_start`: the view comes to it from above, so a long finished
    reply composes its first part (else its last)."""
    match entry:
        case UserEntry():
            return UserMessage(entry)
        case ContextEntry():
            return ContextCard(entry)
        case AssistantEntry():
            return AssistantMessage(entry, from_start=from_start)
        case ToolEntry():
            return ToolCard(entry)
        case TurnEntry():
            rule = TurnRule(entry)
            rule.add_class("turn-rule")
            return rule
        case ErrorEntry():
            line = LineEntry(entry)
            line.add_class("error")
            return line
        case TurnEndEntry():
            line = LineEntry(entry)
            line.add_class("turn-end")
            return line
        case CommandEntry():
            line = LineEntry(entry)
            line.add_class("command")
            return line
        case RewindEntry():
            line = LineEntry(entry)
            line.add_class("rewind")
            return line
        case _:
            line = LineEntry(entry)
            line.add_class("note")
            return line


def _moved(marked: Widget | None, block: Widget | None, mark: str) -> Widget | None:
    """`mark` moved from the block that had it to `block`; returns the block that has it now."""
    if block is not marked:
        if marked is not None:
            marked.remove_class(mark)
        if block is not None:
            block.add_class(mark)
    return block
