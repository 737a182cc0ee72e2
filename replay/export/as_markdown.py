"""The Markdown export: turns as headings, injected context as quoted cards naming their source,
tool calls with their arguments and results in fences."""

from __future__ import annotations

import re

from engine.events import MessageData, WorkspaceFileChange
from engine.rewind_report import files_summary
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
from replay.export.view import SessionView
from replay.file_diff import (
    change_diff,
    change_heading,
    cut_lines,
    file_diff,
    file_line,
)
from replay.wording import (
    UNTITLED,
    area_line,
    arguments_text,
    checkpoints_off_line,
    command_line,
    compact_line,
    cut_short,
    gc_line,
    mode_line,
    model_line,
    retry_line,
    rewind_files,
    rewind_line,
    spent_line,
    tool_state,
    turn_end_line,
    turn_line,
    when,
)

_BACKTICKS = re.compile(r"`+")
TURN_LEVEL = 2
"""A turn's heading is `##`: the headings of the words inside it nest below it."""
_ATX = re.compile(r"^([ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+[ \t>]*)*)(#{1,6})(?=[ \t]|$)")
"""An ATX heading's marks, after the blockquote and list markers its line may start with."""
DIFF_LINES = 80
"""A diff longer than this is cut, with a line and a note that say so (the JSON export holds it
whole)."""
_CONTAINER = re.compile(r"^[ \t>]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+[ \t>]*)*")


def nested(markdown: str, below: int = TURN_LEVEL) -> str:
    """`markdown` with each heading `below` levels deeper (at most `######`): the model's
    `## Plan` in a turn becomes `#### Plan`, under the turn's `##`, not beside it. A setext
    heading (underlined) becomes an ATX one; code, and what only looks like a heading, stays."""
    from markdown_it import MarkdownIt  # parsed only when exporting Markdown

    tokens = MarkdownIt("commonmark").parse(markdown)
    lines = markdown.splitlines(keepends=True)
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        marks = "#" * min(int(token.tag[1:]) + below, 6)
        start, end = token.map
        if token.markup.startswith("#"):
            line = lines[start]
            found = _ATX.match(line)
            if found is not None:
                lines[start] = found.group(1) + marks + line[found.end() :]
            continue
        # setext: its text lines, then the underline; one ATX line takes their place
        prefix = _CONTAINER.match(lines[start])
        words = tokens[index + 1].content.replace("\n", " ")
        ending = "\n" if lines[end - 1].endswith("\n") else ""
        lines[start] = f"{prefix.group(0) if prefix else ''}{marks} {words}{ending}"
        for gone in range(start + 1, end):
            lines[gone] = ""
    return "".join(lines)


def fence(text: str, info: str = "") -> str:
    """A fenced block that no run of backticks in `text` can close early."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}{info}\n{text}\n{marks}"


def diff_fence(diff: str) -> str:
    """A diff's fenced block, cut past `DIFF_LINES` lines."""
    shown, left_out = cut_lines(diff, DIFF_LINES)
    if not left_out:
        return fence(diff, "diff")
    return (
        fence(f"{shown}\n… ✂ {left_out} more lines", "diff")
        + f"\n\n*The diff is cut at {DIFF_LINES} lines: the JSON export holds all of it.*"
    )


def _file_diffs(files: tuple[WorkspaceFileChange, ...]) -> list[str]:
    blocks: list[str] = []
    for change in files:
        blocks += [f"*{file_line(change).capitalize()}:*", diff_fence(file_diff(change))]
    return blocks


def quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


def _header(view: SessionView) -> list[str]:
    info = view.info
    lines = [
        f"# {view.title or UNTITLED}",
        "",
        f"- Session: `{info.id}`",
        f"- Workspace: `{info.cwd}`",
        f"- Model: {info.model or '-'}",
        f"- Created: {when(info.created)} · updated: {when(info.updated)}",
        f"- Turns: {info.turns} · events: {info.event_count}",
    ]
    spent = spent_line(view.usage, view.cost)
    if spent:
        lines.append(f"- Used: {spent}")
    if info.parent_id is not None:
        lines.append(f"- Forked from `{info.parent_id}` at seq {info.fork_seq}")
    if view.max_class is not None:
        lines.append(f"- Redacted: everything above {view.max_class.name}")
    return lines


def _messages(messages: tuple[MessageData, ...]) -> list[str]:
    return [fence(m.content, "text") for m in messages]


def entry_markdown(entry: TranscriptEntry) -> list[str]:
    """The Markdown blocks of one entry."""
    match entry:
        case TurnEntry():
            changes = entry.changes
            if changes is None or not changes.files:
                return [f"## {turn_line(entry)}"]
            listed = "\n".join(f"- {file_line(f)}" for f in changes.files)
            return [f"## {turn_line(entry)}", f"*{files_summary(changes.files)}:*", listed]
        case TurnEndEntry():
            return [f"**{turn_end_line(entry)}**"]
        case UserEntry():
            blocks = ["**User**", quote(nested(entry.content))]
            if entry.original is not None:
                blocks += [
                    "*A prompt listener rewrote this; the user typed:*",
                    quote(nested(entry.original)),
                ]
            for attachment in entry.attachments:
                blocks.append(f"*Attachment:* `{attachment.name}` ({attachment.mime_type})")
                if attachment.text:
                    blocks.append(fence(attachment.text, "text"))
            return blocks
        case ContextEntry():
            return [quote(f"**Injected context · {entry.heading}**\n\n{nested(entry.content)}")]
        case AssistantEntry():
            blocks = [f"**Assistant** · {entry.model or 'model'} · step {entry.step}"]
            if entry.reasoning:
                blocks.append(quote(f"*Reasoning*\n\n{nested(entry.reasoning)}"))
            if entry.content:
                blocks.append(nested(entry.content))
            if cut_short(entry) is not None:
                blocks.append(f"*(reply ended: {entry.finish})*")
            return blocks
        case ToolEntry():
            state = tool_state(entry)
            blocks = [
                f"**Tool call** `{entry.name}` ({state})",
                fence(arguments_text(entry.arguments), "json"),
            ]
            if entry.result is not None:
                kind = "Error" if entry.is_error else "Result"
                blocks += [f"*{kind}:*", fence(entry.result, "text")]
            if entry.change is not None:
                heading = change_heading(entry.change).capitalize()
                blocks += [f"*{heading}:*", diff_fence(change_diff(entry.change))]
            return blocks + _file_diffs(entry.files)
        case AreaEntry():
            return [f"*{area_line(entry)}:*", *_messages(entry.messages)]
        case GcEntry():
            promoted = ["*Promoted:*", *_messages(entry.promoted)] if entry.promoted else []
            return [f"*{gc_line(entry)}*", *promoted]
        case CompactEntry():
            summary = [quote(nested(entry.summary))] if entry.summary else []
            return [f"---\n\n*{compact_line(entry)}*", *summary]
        case RetryEntry():
            return [f"*{retry_line(entry)}*"]
        case ModelEntry():
            return [f"*{model_line(entry)}*"]
        case ModeEntry():
            return [f"*{mode_line(entry)}*"]
        case CommandEntry():
            return [f"**{command_line(entry)}**", fence(entry.result, "text")]
        case RewindEntry():
            prompt = [quote(nested(entry.prompt))] if entry.prompt else []
            done = [f"- {line}" for line in rewind_files(entry)]
            files = ["\n".join(done)] if done else []
            before = ", before:" if entry.prompt else ""
            return [f"---\n\n*{rewind_line(entry)}{before}*", *prompt, *files]
        case CheckpointsOffEntry():
            return [f"*{checkpoints_off_line(entry)}*"]
        case ErrorEntry():
            return [f"**Error:** {entry.message}"]


def to_markdown(view: SessionView) -> str:
    blocks = _header(view)
    for entry in view.transcript.entries:
        blocks.append("")
        blocks.append("\n\n".join(entry_markdown(entry)))
    return "\n".join(blocks) + "\n"
