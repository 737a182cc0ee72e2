"""Rewinding the workspace: the files the agent changed since a prompt go back to what they
were before it, from the session's checkpoints (`engine.checkpoints`).

What to put back is read from the log: every `turn/changes` after the prompt's `turn/start`
(rewound turns included: their files are on disk), and every code rewind since. The target is
the checkpoint taken before the first of them; what the agent last left (`expected`) is the
latest checkpoint after one; only the files those records name are touched, so an edit the
user made between turns to a file the agent never touched is not undone. A file that differs
now from what the agent left is someone else's edit: listed, and kept unless overwritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from engine.events import Event, SessionRewind, TurnChanges

if TYPE_CHECKING:
    from engine.agent.runtime import Runtime
    from engine.checkpoints import PathNote, RestorePlan

OUTSIDE_EFFECTS = (
    "effects outside the workspace: network calls, MCP tools' own state, processes a command "
    "started"
)


@dataclass(frozen=True, slots=True)
class CodePlan:
    """What rewinding the files to before a prompt would do, said before anything is touched.
    `refused` says why the files cannot be rewound (no checkpoints, another host's, an editor
    holds them); with neither `refused` nor `plan`, no turn since changed a file."""

    to_turn: int
    refused: str | None = None
    plan: RestorePlan | None = None
    paths: tuple[str, ...] = ()
    """Every file the agent changed since the prompt (the records' paths)."""
    unrestorable: tuple[str, ...] = ()
    """What no restore brings back, in words: files over the cap, ignored files, the
    workspace's own `.git`, effects outside the workspace."""

    @property
    def writes(self) -> tuple[str, ...]:
        return tuple(w.path for w in self.plan.writes) if self.plan is not None else ()

    @property
    def deletes(self) -> tuple[str, ...]:
        return self.plan.deletes if self.plan is not None else ()

    @property
    def conflicts(self) -> tuple[str, ...]:
        return self.plan.conflicts if self.plan is not None else ()


@dataclass(frozen=True, slots=True)
class CodeResult:
    """What a code rewind did; `before` and `after` are the checkpoints around it (an undo
    puts back `before`)."""

    before: str
    after: str
    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    failed: tuple[PathNote, ...] = field(default=())


@dataclass(slots=True)
class _Span:
    target: str | None = None
    expected: str | None = None
    paths: set[str] = field(default_factory=set)
    unrestorable: set[str] = field(default_factory=set)


def _span(events: Iterable[Event], after_seq: int) -> _Span:
    """The checkpoints and files of what the agent (and code rewinds) changed after `after_seq`,
    events in log order."""
    span = _Span()
    for event in events:
        data = event.data
        if event.seq <= after_seq:
            continue
        match data:  # exact: a payload class is never subclassed (see `Payload`)
            case TurnChanges():
                span.target = span.target or data.before
                span.expected = data.after
                span.paths.update(f.path for f in data.files)
                span.unrestorable.update(f.path for f in data.files if not f.restorable)
            case SessionRewind() if data.code_after is not None:
                span.target = span.target or data.code_before
                span.expected = data.code_after
                span.paths.update((*data.restored, *data.deleted))
    return span


def _only(plan: RestorePlan, paths: set[str]) -> RestorePlan:
    return replace(
        plan,
        writes=tuple(w for w in plan.writes if w.path in paths),
        deletes=tuple(p for p in plan.deletes if p in paths),
        conflicts=tuple(p for p in plan.conflicts if p in paths),
        not_restorable=tuple(n for n in plan.not_restorable if n.path in paths),
    )


def _unrestorable(plan: RestorePlan, span: _Span) -> tuple[str, ...]:
    said = [f"{note.path}: {note.reason}" for note in plan.not_restorable]
    said += [
        f"{path}: over the size cap, never kept"
        for path in sorted(span.unrestorable)
        if path not in {n.path for n in plan.not_restorable}
    ]
    said += [f"{note.path}: {note.reason}" for note in plan.outside_links]
    if plan.ignore_rules:
        said.append(
            "ignored files are never checkpointed, so never restored: "
            + ", ".join(r for r in plan.ignore_rules if r and not r.startswith("#"))
            + (" and the rules of " + ", ".join(plan.ignore_files) if plan.ignore_files else "")
        )
    said.append("the workspace's own .git (commits the agent made stay)")
    said.append(OUTSIDE_EFFECTS)
    return tuple(said)


async def _events(rt: Runtime) -> list[Event]:
    found: list[Event] = []
    async for chunk in rt.session.chunks():
        found.extend(e for e in chunk if type(e.data) in (TurnChanges, SessionRewind))
    return found


async def plan_code(
    rt: Runtime, to_turn: int, since_seq: int, *, refused: str | None = None
) -> CodePlan:
    """What rewinding the files to before turn `to_turn` would do: back to before what the
    agent (and code rewinds) changed from `since_seq` on (the turn's `turn/start`; for an undo,
    the undone rewind). `refused`: a front end's reason the files are not Trellis's to write
    (an editor holds them)."""
    if refused is not None:
        return CodePlan(to_turn, refused=refused)
    span = _span(await _events(rt), since_seq - 1)
    if span.target is None or span.expected is None:
        return CodePlan(to_turn)
    store = await rt.checkpointing.store()
    if store is None:
        return CodePlan(to_turn, refused=rt.checkpointing.why_off or "checkpoints are off")
    from engine.checkpoints.store import UnknownCheckpointError

    try:
        made = await store.plan_restore(span.target, span.expected)
    except UnknownCheckpointError as exc:
        return CodePlan(
            to_turn,
            refused=f"this session's checkpoints are not on this host ({exc}): its files can "
            "be rewound only where it ran",
        )
    plan = _only(made, span.paths)
    return CodePlan(
        to_turn,
        plan=plan,
        paths=tuple(sorted(span.paths)),
        unrestorable=_unrestorable(plan, span),
    )


async def restore_code(rt: Runtime, plan: CodePlan, *, overwrite: bool) -> CodeResult:
    """Apply `plan` (made by `plan_code`); conflicts are kept unless `overwrite`. The checkpoint
    the plan took first is the undo point; one more is taken after."""
    assert plan.plan is not None
    store = await rt.checkpointing.store()
    if store is None:
        raise RuntimeError("checkpoints went off between the plan and the rewind")
    done = await store.restore(plan.plan, overwrite=overwrite)
    after = (await store.take("after a rewind")).id
    return CodeResult(
        before=plan.plan.current,
        after=after,
        written=done.written,
        deleted=done.deleted,
        kept=done.kept_conflicts,
        failed=done.failed,
    )
