"""`trellis show`: a transcript as terminal text, styled on a terminal and plain when piped."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from engine.events import WorkspaceFileChange
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
from replay.file_diff import change_diff, change_heading, file_line
from replay.wording import (
    area_line,
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
    tool_line,
    turn_end_line,
    turn_line,
)

SHOWN_RESULT_LINES = 12
"""A tool result longer than this shows its first lines and how many were left out."""


@dataclass(frozen=True, slots=True)
class Style:
    """ANSI styles; all empty when the output is not a terminal."""

    heading: str = ""
    who: str = ""
    dim: str = ""
    context: str = ""
    tool: str = ""
    error: str = ""
    reset: str = ""


PLAIN = Style()
ANSI = Style(
    heading="\x1b[1;4m",
    who="\x1b[1m",
    dim="\x1b[2m",
    context="\x1b[33m",
    tool="\x1b[36m",
    error="\x1b[31m",
    reset="\x1b[0m",
)


def _indented(text: str, prefix: str = "  ") -> Iterator[str]:
    for line in text.split("\n"):
        yield prefix + line


def _result(text: str) -> Iterator[str]:
    lines = text.split("\n")
    yield from _indented("\n".join(lines[:SHOWN_RESULT_LINES]), "  │ ")
    if len(lines) > SHOWN_RESULT_LINES:
        yield f"  │ … {len(lines) - SHOWN_RESULT_LINES} more lines"


def _files(files: tuple[WorkspaceFileChange, ...], s: Style) -> Iterator[str]:
    for change in files:
        yield f"{s.dim}    {file_line(change)}{s.reset}"


def entry_lines(entry: TranscriptEntry, s: Style) -> Iterator[str]:
    match entry:
        case TurnEntry():
            yield ""
            yield f"{s.heading}{turn_line(entry)}{s.reset}"
            if entry.changes is not None and entry.changes.files:
                yield f"{s.dim}  {files_summary(entry.changes.files)}:{s.reset}"
                yield from _files(entry.changes.files, s)
        case TurnEndEntry():
            yield f"{s.error}{turn_end_line(entry)}{s.reset}"
        case UserEntry():
            yield f"{s.who}User{s.reset}"
            yield from _indented(entry.content)
            if entry.original is not None:
                yield f"{s.dim}  (a prompt listener rewrote this; the user typed:){s.reset}"
                yield from _indented(entry.original, "    ")
            for attachment in entry.attachments:
                yield f"{s.dim}  attachment: {attachment.name} ({attachment.mime_type}){s.reset}"
        case ContextEntry():
            yield f"{s.context}┃ Injected context · {entry.heading}{s.reset}"
            yield from (f"{s.context}┃{s.reset}{line}" for line in _indented(entry.content, " "))
        case AssistantEntry():
            yield f"{s.who}Assistant{s.reset} {s.dim}· {entry.model or 'model'} · step {entry.step}{s.reset}"
            if entry.reasoning:
                yield from (f"{s.dim}{line}{s.reset}" for line in _indented(entry.reasoning))
            if entry.content:
                yield from _indented(entry.content)
            if cut_short(entry) is not None:
                yield f"{s.dim}  (reply ended: {entry.finish}){s.reset}"
        case ToolEntry():
            color = s.error if entry.status in ("error", "cancelled") else s.tool
            yield f"{color}▸ {tool_line(entry)}{s.reset}"
            if entry.result is not None:
                yield from _result(entry.result)
            if entry.change is not None:
                yield f"{s.dim}  {change_heading(entry.change)}{s.reset}"
                yield from _indented(change_diff(entry.change), "    ")
            if entry.files:
                yield f"{s.dim}  {files_summary(entry.files)}:{s.reset}"
                yield from _files(entry.files, s)
        case AreaEntry():
            yield f"{s.dim}· {area_line(entry)}{s.reset}"
        case GcEntry():
            yield f"{s.dim}· {gc_line(entry)}{s.reset}"
        case CompactEntry():
            yield f"{s.dim}· {compact_line(entry)}{s.reset}"
            if entry.summary:
                yield from (f"{s.dim}{line}{s.reset}" for line in _indented(entry.summary))
        case RetryEntry():
            yield f"{s.error}· {retry_line(entry)}{s.reset}"
        case ModelEntry():
            yield f"{s.dim}· {model_line(entry)}{s.reset}"
        case ModeEntry():
            yield f"{s.dim}· {mode_line(entry)}{s.reset}"
        case CommandEntry():
            yield f"{s.who}{command_line(entry)}{s.reset}"
            yield from _indented(entry.result)
        case RewindEntry():
            yield f"{s.who}↶ {rewind_line(entry)}{', before:' if entry.prompt else ''}{s.reset}"
            if entry.prompt:
                yield from _indented(entry.prompt)
            yield from (f"{s.dim}  {line}{s.reset}" for line in rewind_files(entry))
        case CheckpointsOffEntry():
            yield f"{s.error}· {checkpoints_off_line(entry)}{s.reset}"
        case ErrorEntry():
            yield f"{s.error}Error: {entry.message}{s.reset}"


def transcript_text(entries: list[TranscriptEntry], style: Style) -> str:
    return "\n".join(line for entry in entries for line in entry_lines(entry, style)) + "\n"
