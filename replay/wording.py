"""How transcript entries read in words, shared by every export format and `trellis show`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from engine.events import WorkspaceFileChange
from engine.permission_mode import MODE_NAMES
from replay.entries import (
    AreaEntry,
    AssistantEntry,
    CommandEntry,
    CompactEntry,
    GcEntry,
    ModeEntry,
    ModelEntry,
    RetryEntry,
    RewindEntry,
    ToolEntry,
    TurnEndEntry,
    TurnEntry,
)

UNTITLED = "Untitled session"


def when(timestamp: float) -> str:
    """A wall time in UTC, to the second, so an export reads the same on every machine."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def turn_line(turn: TurnEntry) -> str:
    """`Turn 2 · completed · 3 steps · 1.4 s · 120 in / 30 out tokens`."""
    parts = [f"Turn {turn.number}", turn.reason or "running"]
    if turn.repaired:
        parts[1] = "interrupted (repaired after a crash)"
    parts.append(f"{turn.steps} step" + ("" if turn.steps == 1 else "s"))
    if turn.end is not None:
        parts.append(f"{turn.end - turn.start:.1f} s")
    usage = turn.usage
    if usage.input_tokens or usage.output_tokens:
        parts.append(f"{usage.input_tokens} in / {usage.output_tokens} out tokens")
    return " · ".join(parts)


def turn_end_line(end: TurnEndEntry) -> str:
    """`Turn 2 ended (cancelled): Cancelled by the user.`"""
    return f"Turn {end.turn} ended ({end.reason}): {end.message}"


def cut_short(reply: AssistantEntry) -> str | None:
    """Why a reply ended other than normally (`length`, `cancelled`, ...), or None."""
    return None if reply.finish in (None, "stop", "tool_calls") else reply.finish


def tool_state(tool: ToolEntry) -> str:
    """`done`, or `error, permission deny`."""
    return tool.status + (f", permission {tool.permission}" if tool.permission else "")


def arguments_text(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def tool_line(tool: ToolEntry) -> str:
    """`look {"path": "a"} → done (allowed)`."""
    return f"{tool.name} {arguments_text(tool.arguments)} → {tool_state(tool)}"


def area_line(area: AreaEntry) -> str:
    count = len(area.messages)
    return f"Area {area.area} rendered {count} message{'' if count == 1 else 's'}"


def gc_line(gc: GcEntry) -> str:
    return (
        f"Collected {', '.join(gc.areas)}: {len(gc.reclaimed)} reclaimed, "
        f"{len(gc.promoted)} promoted, {len(gc.carried)} carried over"
    )


def compact_line(compact: CompactEntry) -> str:
    state = "" if compact.done else " (unfinished)"
    return (
        f"Compaction of {compact.groups} group{'' if compact.groups == 1 else 's'}: "
        f"{len(compact.reclaimed)} items summarized, {len(compact.carried)} carried over{state}"
    )


def retry_line(retry: RetryEntry) -> str:
    return f"Retry {retry.attempt} of step {retry.step}: {retry.reason}"


def model_line(model: ModelEntry) -> str:
    return f"Model: {model.model}"


def mode_line(mode: ModeEntry) -> str:
    """`Mode: read-only`, or why `approve all` ended when the session was reopened."""
    line = f"Mode: {MODE_NAMES[mode.mode]}"
    if mode.resumed:
        line += " (approve all ends when a session is reopened)"
    return line


def command_line(command: CommandEntry) -> str:
    """The command as typed: what its result answers."""
    return f"Command: {command.line}"


def rewind_line(rewind: RewindEntry) -> str:
    """`Rewound to turn 3 (conversation)`, or `Undid the rewind to turn 3 (code)`."""
    return rewind_words(
        rewind.to_turn,
        conversation=rewind.conversation,
        code=rewind.code,
        undo=rewind.undoes is not None,
    )


def rewind_words(to_turn: int, *, conversation: bool, code: bool, undo: bool = False) -> str:
    """`Rewound to turn 3 (conversation)`: what went back, to before which prompt; an undo's
    `Undid the rewind to turn 3 (conversation)`."""
    parts = [name for name, done in (("code", code), ("conversation", conversation)) if done]
    done = "Undid the rewind to" if undo else "Rewound to"
    return f"{done} turn {to_turn} ({' and '.join(parts) or 'nothing'})"


def line_counts(added: int | None, removed: int | None) -> str:
    """`+3 -1` (as the permission dialog counts them), or nothing when the lines were not
    counted (a binary or secret file)."""
    if added is None and removed is None:
        return ""
    return f"+{added or 0} -{removed or 0}"


def files_changed(files: tuple[WorkspaceFileChange, ...]) -> str:
    """`3 files changed +12 -4`: what a turn or a command changed in the workspace."""
    added = sum(f.added_lines or 0 for f in files)
    removed = sum(f.removed_lines or 0 for f in files)
    counted = any(f.added_lines is not None or f.removed_lines is not None for f in files)
    counts = f" {line_counts(added, removed)}" if counted else ""
    return f"{len(files)} file{'' if len(files) == 1 else 's'} changed{counts}"


FILE_MARKS = {"added": "A", "modified": "M", "deleted": "D"}
"""The letter `git status --short` gives each kind of change."""


def file_line(change: WorkspaceFileChange) -> str:
    """`M src/a.py +3 -1`, with why it has no diff or cannot be restored."""
    parts = [FILE_MARKS[change.status], change.path]
    counts = line_counts(change.added_lines, change.removed_lines)
    if counts:
        parts.append(counts)
    if change.withheld is not None:
        parts.append(f"({change.withheld})")
    if not change.restorable:
        parts.append("(not restorable)")
    return " ".join(parts)


def rewind_outcome(rewind: RewindEntry) -> str:
    """What the files' part of a rewind did: `2 restored, 1 removed, 1 kept (changed since)`;
    empty when it touched none."""
    if rewind.code_refused is not None:
        return f"files not rewound: {rewind.code_refused}"
    parts = []
    if rewind.restored:
        parts.append(f"{len(rewind.restored)} restored")
    if rewind.deleted:
        parts.append(f"{len(rewind.deleted)} removed")
    if rewind.kept:
        parts.append(f"{len(rewind.kept)} kept (changed since): {', '.join(rewind.kept)}")
    if rewind.failed:
        parts.append(f"{len(rewind.failed)} failed: {'; '.join(rewind.failed)}")
    return f"files: {', '.join(parts)}" if parts else ""
