"""How transcript entries read in words, shared by every export format and `trellis show`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from engine.events import SessionRewind, Usage
from engine.money import cost_text
from engine.permission_mode import MODE_NAMES
from replay.entries import (
    AreaEntry,
    AssistantEntry,
    CheckpointsOffEntry,
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


def token_parts(
    usage: Usage,
    number: Callable[[int], str] = str,
    *,
    read: str = "cache read",
    write: str = "cache write",
    separator: str = " · ",
) -> str:
    """`in 120 · cache read 900 · cache write 50 · out 30 tok`: the parts that do not overlap
    (`Usage`), a cache part only when the provider reported one; "" when none was reported.
    A narrow line names them shorter (`in 120 read 900 write 50 out 30 tok`)."""
    if not (usage.prompt_tokens or usage.output_tokens):
        return ""
    parts = [f"in {number(usage.input_tokens)}"]
    if usage.cache_read_tokens:
        parts.append(f"{read} {number(usage.cache_read_tokens)}")
    if usage.cache_write_tokens:
        parts.append(f"{write} {number(usage.cache_write_tokens)}")
    parts.append(f"out {number(usage.output_tokens)} tok")
    return separator.join(parts)


def spent_line(usage: Usage, cost: Mapping[str, float] | None) -> str:
    """`in 1,200 · cache read 9,800 · out 230 tok · 0.0421 USD`: what a session or a turn used
    and cost; "" when its steps reported nothing."""
    parts = (
        [token_parts(usage, "{:,}".format)] if usage.prompt_tokens or usage.output_tokens else []
    )
    if cost:
        parts.append(cost_text(cost))
    return " · ".join(parts)


def turn_line(turn: TurnEntry) -> str:
    """`Turn 2 · completed · 3 steps · 1.4 s · in 120 · cache read 900 · out 30 tok ·
    0.0042 USD`."""
    parts = [f"Turn {turn.number}", turn.reason or "running"]
    if turn.repaired:
        parts[1] = "interrupted (repaired after a crash)"
    parts.append(f"{turn.steps} step" + ("" if turn.steps == 1 else "s"))
    if turn.end is not None:
        parts.append(f"{turn.end - turn.start:.1f} s")
    spent = spent_line(turn.usage, turn.cost)
    if spent:
        parts.append(spent)
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


def rewind_line(rewind: RewindEntry | SessionRewind) -> str:
    """`Rewound to turn 3 (code and conversation)`, or `Undid the rewind to turn 3 (...)`: what
    went back (the files only when they did: `code` with `code_refused` was asked, and refused),
    to before which prompt."""
    return rewind_words(
        rewind.to_turn,
        conversation=rewind.conversation,
        code=rewind.code and rewind.code_refused is None,
        undo=rewind.undoes is not None,
    )


def rewind_words(to_turn: int, *, conversation: bool, code: bool, undo: bool = False) -> str:
    """`rewind_line`'s words from what a rewind took back, for a caller that holds its result
    rather than its record (the console's notice)."""
    parts = [name for name, done in (("code", code), ("conversation", conversation)) if done]
    what = " and ".join(parts) or "nothing"
    if undo:
        return f"Undid the rewind to turn {to_turn} ({what})"
    return f"Rewound to turn {to_turn} ({what})"


def rewind_files(rewind: RewindEntry | SessionRewind) -> list[str]:
    """What a rewind did to the files, a line per kind (`restored: a.py, b.py`), or why it did
    not touch them though asked; none for a conversation rewind."""
    lines: list[str] = []
    if rewind.code_refused:
        lines.append(f"files not rewound: {rewind.code_refused}")
    for name, paths in (
        ("restored", rewind.restored),
        ("removed", rewind.deleted),
        ("kept, changed by someone else since", rewind.kept),
        ("failed", rewind.failed),
    ):
        if paths:
            lines.append(f"{name}: {', '.join(paths)}")
    return lines


def checkpoints_off_line(entry: CheckpointsOffEntry) -> str:
    return f"Checkpoints off from here on, so no changes to the files are recorded: {entry.reason}"
