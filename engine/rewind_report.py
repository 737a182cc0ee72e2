"""What a rewind says, in plain lines: the prompts it can go back to, what it would do to the
files before the user confirms, and what it did. `/rewind` (headless, ACP) and `trellis rewind`
say the same words."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.counts import counted
from engine.text_lines import first_line

if TYPE_CHECKING:
    from engine.agent.code_rewind import CodePlan
    from engine.agent.rewind import RewindPoint, RewindResult, RewoundTurn
    from engine.events import WorkspaceFileChange

FIRST_LINE_WIDTH = 60


def prompt_line(text: str, width: int = FIRST_LINE_WIDTH) -> str:
    """A prompt's first line, cut to `width`; ` …` says more lines follow."""
    return first_line(text, width, more=True)


def files_summary(files: Sequence[WorkspaceFileChange]) -> str:
    """`2 files +3 -1`; `no file changed` when none."""
    if not files:
        return "no file changed"
    added = sum(f.added_lines or 0 for f in files)
    removed = sum(f.removed_lines or 0 for f in files)
    return f"{counted(len(files), 'file')} +{added} -{removed}"


def points_text(turns: Sequence[RewoundTurn], usage: str) -> str:
    """The prompts a rewind can go back to, one a line, and how to rewind."""
    if not turns:
        return "nothing to rewind: the session has no prompt yet"
    lines = ["the prompts a rewind can go back to (it goes to just before the prompt):"]
    for turn in turns:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(turn.time)) if turn.time else ""
        lines.append(
            f"{turn.turn:>4}  {when}  {prompt_line(turn.prompt) or '(no prompt)'}"
            f"  [{files_summary(turn.files)}]"
        )
    lines.append(f"usage: {usage}")
    return "\n".join(lines)


def _listed(title: str, paths: Sequence[str]) -> list[str]:
    return [f"{title}: {', '.join(paths)}"] if paths else []


def plan_text(point: RewindPoint, plan: CodePlan | None, *, conversation: bool) -> str:
    """What a rewind to `point` would do, said before it is made."""
    where = (
        f"undo the last rewind (to before turn {point.to_turn})"
        if point.undoes is not None
        else f"rewind to before turn {point.to_turn}"
    )
    parts = " and ".join(
        p for p, on in (("the conversation", conversation), ("the files", plan is not None)) if on
    )
    lines = [f"{where}: {parts}"]
    if point.prompt and point.undoes is None:
        lines.append(f"prompt of turn {point.to_turn}: {prompt_line(point.prompt)}")
    if plan is not None:
        lines += _code_plan_lines(plan)
    return "\n".join(lines)


def _code_plan_lines(plan: CodePlan) -> list[str]:
    if plan.refused is not None:
        return [f"files cannot be rewound: {plan.refused}"]
    if plan.plan is None:
        return ["files: none changed since then, nothing to write"]
    lines = _listed("files to write", plan.writes)
    lines += _listed("files to remove", plan.deletes)
    if not (plan.writes or plan.deletes):
        lines.append("files: already as they were then, nothing to write")
    lines += _listed("changed by someone else since the agent left them", plan.conflicts)
    lines += [f"cannot be restored: {what}" for what in plan.unrestorable]
    return lines


def result_text(result: RewindResult, *, code_asked: bool) -> str:
    """What a rewind did: the files written, removed and kept, the session state restored, and
    what it could not take back."""
    if result.undid is not None:
        lines = [f"undid the last rewind (to before turn {result.to_turn})"]
    else:
        lines = [f"rewound to before turn {result.to_turn}"]
    code = result.code
    if code is not None:
        lines += _listed("files written", code.written)
        lines += _listed("files removed", code.deleted)
        if not (code.written or code.deleted or code.kept or code.failed):
            lines.append("files: already as they were, none written")
        lines += _listed("kept, changed by someone else (overwrite replaces them)", code.kept)
        lines += [f"failed: {note.path}: {note.reason}" for note in code.failed]
    elif result.code_refused is not None:
        lines.append(f"files not rewound: {result.code_refused}")
    elif code_asked:
        lines.append("files: none changed since then")
    if result.conversation:
        mode = result.mode + (" (approve-all falls back to ask)" if result.mode_fell_back else "")
        lines.append(f"conversation restored: model {result.model}, mode {mode}")
        lines.append("pins: " + (", ".join(p.id for p in result.pins) or "none"))
        if result.areas:
            lines.append(
                "areas: " + ", ".join(f"{a.name or a.id} ({a.kind})" for a in result.areas)
            )
        lines += [f"area not restored: {what}" for what in result.unrestored_areas]
        lines += [f"dropped, waiting to be sent: {prompt_line(text)}" for text in result.cleared]
        if result.prompt and result.undid is None:
            lines.append(f"prompt of turn {result.to_turn}: {prompt_line(result.prompt)}")
    lines += [f"not restored: {what}" for what in result.not_restored]
    return "\n".join(lines)
