"""Rewinding the conversation: the session goes back to just before one of its prompts.

The rewind is a `session/rewind` event; the session's state is then rebuilt from the log with the
rewound events left out, by the same code a resume runs (`engine.agent.followers`), so the live
Agent after a rewind is what reopening the session would give. Nothing is deleted: the log, and
its transcript, keep every turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from engine.agent.followers import Followers, rebuild_state
from engine.agent.outbox import Steering
from engine.errors import TrellisError
from engine.events import (
    Event,
    PermissionModeSet,
    SessionRewind,
    TurnChanges,
    TurnStart,
    UserMessage,
    WorkspaceFileChange,
)
from engine.permission_mode import PermissionMode
from engine.privacy import PrivatizationLabel

if TYPE_CHECKING:
    from engine.agent.code_rewind import CodePlan, CodeResult
    from engine.agent.runtime import Runtime
    from engine.agent.views import AreaView, PinView

NOT_RESTORED = (
    "files: a conversation rewind leaves the workspace as it is",
    "what tools did outside the session (commands run, network calls, MCP servers)",
    'standing permission rules ("always allow"/"always deny"): they stay',
    "the session's title",
)
"""What a conversation rewind does not take back, said with every rewind."""


class RewindError(TrellisError, ValueError):
    """A rewind that cannot be made: a turn runs, or the turn is not in the history."""


@dataclass(frozen=True, slots=True)
class RewoundTurn:
    """Where a turn of the history starts, the words of its prompt, when it began and the files
    it changed (its `turn/changes`; empty when it changed none or there were no checkpoints)."""

    turn: int
    seq: int  # its `turn/start`
    prompt: str
    label: PrivatizationLabel | None
    time: float = 0.0
    files: tuple[WorkspaceFileChange, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RewindResult:
    """What a rewind restored, and what it could not."""

    to_turn: int
    to_seq: int
    seq: int  # the `session/rewind` event
    prompt: str  # the rewound prompt's words, for the input
    model: str  # the model entry in force again
    mode: PermissionMode  # the permission mode in force again
    mode_fell_back: bool  # the restored mode was approve-all, which fell back to ask
    pins: tuple[PinView, ...]
    areas: tuple[AreaView, ...]  # the plan, watches and other Areas as restored
    unrestored_areas: tuple[str, ...]  # Areas that could not be rebuilt, with the reason
    cleared: tuple[str, ...]  # steering and injected context that waited, dropped
    not_restored: tuple[str, ...] = NOT_RESTORED
    conversation: bool = True  # the conversation was rewound (else only the files)
    code: CodeResult | None = None  # what the files' rewind did, when it ran
    code_refused: str | None = None  # why the files were not rewound, though asked
    undid: int | None = None  # the seq of the rewind this one undid


async def history_turns(rt: Runtime) -> list[RewoundTurn]:
    """The turns of the session's history (rewound ones left out), oldest first, read by range."""
    turns: list[RewoundTurn] = []
    opened: Event | None = None
    async for chunk in rt.session.chunks():
        for event in rt.rewound.effective(chunk):
            data = event.data
            if opened is not None:
                # a turn's prompt is the user/message right after its turn/start
                prompt, label = "", None
                if type(data) is UserMessage and data.source.is_user:
                    prompt, label = data.content, data.label
                number = opened.data.turn  # type: ignore[attr-defined]
                turns.append(RewoundTurn(number, opened.seq, prompt, label, opened.time))
                opened = None
            match data:  # exact: a payload class is never subclassed (see `Payload`)
                case TurnStart():
                    opened = event
                case TurnChanges() if turns and turns[-1].turn == data.turn:
                    turns[-1] = replace(turns[-1], files=data.files)
    if opened is not None:
        number = opened.data.turn  # type: ignore[attr-defined]
        turns.append(RewoundTurn(number, opened.seq, "", None, opened.time))
    return turns


async def last_rewind(rt: Runtime) -> tuple[Event, SessionRewind] | None:
    """The latest rewind of the history that an undo can take back: not an undo itself, not
    undone already."""
    found: list[tuple[Event, SessionRewind]] = []
    undone: set[int] = set()
    async for chunk in rt.session.chunks():
        for event in rt.rewound.effective(chunk):
            data = event.data
            if type(data) is SessionRewind:
                if data.undoes is not None:
                    undone.add(data.undoes)
                else:
                    found.append((event, data))
    left = [(e, d) for e, d in found if e.seq not in undone]
    return left[-1] if left else None


def _numbers(turns: Sequence[RewoundTurn]) -> str:
    if not turns:
        return "the session has no turn yet"
    shown = ", ".join(str(t.turn) for t in turns[-10:])
    more = f" (and {len(turns) - 10} earlier)" if len(turns) > 10 else ""
    return f"its history holds turns {shown}{more}"


@dataclass(frozen=True, slots=True)
class RewindPoint:
    """Where a rewind takes the session: before turn `to_turn`'s prompt (its `turn/start` at
    `seq`), or, for an undo, back to just before the rewind at `seq` (`undoes`)."""

    to_turn: int
    seq: int
    prompt: str = ""
    label: PrivatizationLabel | None = None
    undoes: int | None = None


async def rewind_point(rt: Runtime, to_turn: int) -> RewindPoint:
    """The point before turn `to_turn`'s prompt; raises `RewindError` for a turn not in the
    history."""
    turns = await history_turns(rt)
    target = next((t for t in turns if t.turn == to_turn), None)
    if target is None:
        raise RewindError(f"cannot rewind to turn {to_turn}: {_numbers(turns)}")
    return RewindPoint(to_turn, target.seq, target.prompt, target.label)


async def undo_point(rt: Runtime) -> tuple[RewindPoint, SessionRewind]:
    """The point an undo of the last rewind goes back to; raises `RewindError` when there is
    no rewind to undo."""
    last = await last_rewind(rt)
    if last is None:
        raise RewindError("there is no rewind to undo")
    event, data = last
    return RewindPoint(data.to_turn, event.seq, undoes=event.seq), data


async def apply_rewind(
    rt: Runtime,
    point: RewindPoint,
    *,
    conversation: bool,
    code: CodeResult | None = None,
    plan: CodePlan | None = None,
    waiting: int,
) -> RewindResult:
    """Append the rewind to `point` and, with `conversation`, rebuild the session's state from
    the history it leaves (between turns only: the Agent checks). `code` is what the files'
    rewind did, `plan` what it was asked to do (its refusal and what cannot be restored are
    said with the result). `waiting`: how many outbox items were staged when the rewind was
    asked for; those are dropped, what came after stays."""
    from engine.agent.views import area_views, pin_views

    state = None
    rewound = rt.rewound
    if conversation:
        # The state is rebuilt before the rewind is appended, as if it stood at the log's end:
        # a read that fails leaves the session as it was. An event appended meanwhile (an idle
        # inject) moves the end: built again.
        while True:
            end = rt.session.next_seq
            rewound = rt.rewound.copy()
            rewound.take(point.seq, end, undoes=point.undoes)
            start = Followers.starting(rt.assembler, rt.permission, rt.context.gateway_type)
            state = await rebuild_state(rt.session, rewound, start)
            if rt.session.next_seq == end:
                break
    staged = rt.outbox.drain() if conversation else []
    cleared = [s.text for s in rt.take_kept_steering()] if conversation else []
    cleared += [i.text if isinstance(i, Steering) else i.content for i in staged[:waiting]]
    refused = plan.refused if plan is not None else None
    payload = SessionRewind(
        to_turn=point.to_turn,
        to_seq=point.seq,
        conversation=conversation,
        code=plan is not None,
        prompt=point.prompt,
        label=point.label,
        undoes=point.undoes,
        code_target=plan.plan.target if plan is not None and plan.plan is not None else None,
        code_before=code.before if code is not None else None,
        code_after=code.after if code is not None else None,
        restored=code.written if code is not None else (),
        deleted=code.deleted if code is not None else (),
        kept=code.kept if code is not None else (),
        failed=tuple(f"{n.path}: {n.reason}" for n in code.failed) if code is not None else (),
        code_refused=refused,
    )
    bound = rt.assembler.binding.name
    event = rt.session.append(payload)
    fell_back = False
    if state is not None:
        rt.rewound = rewound
        rt.adopt(state)
        restored = rt.assembler.active_model
        if restored != bound:
            # Bound again, so the log says which model the session goes on with and the store's
            # record (the session list, a fork) names it. A log whose first binding came after
            # that turn (bound when it was resumed) keeps the model in force.
            rt.record(rt.assembler.bind(bound if restored is None else restored))
        for item in staged[waiting:]:  # injected while the rewind ran (steering is a send then)
            if not isinstance(item, Steering):
                rt.append_context(item)
        fell_back = rt.permission.mode == "approve-all"
        if fell_back:
            # as on resume: approve-all never comes back without the user setting it again
            fallback = PermissionModeSet(mode="ask", resumed=True)
            rt.record(fallback)
            rt.permission.follow(fallback)
    await rt.idle_flush()
    not_restored = list(NOT_RESTORED[1:] if plan is not None else NOT_RESTORED)
    if plan is not None:
        not_restored = [*plan.unrestorable, *not_restored[1:]]
    if not conversation:
        not_restored = [n for n in not_restored if not n.startswith("standing permission")]
        not_restored = [n for n in not_restored if n != "the session's title"]
    return RewindResult(
        to_turn=point.to_turn,
        to_seq=point.seq,
        seq=event.seq,
        prompt=point.prompt,
        model=rt.assembler.binding.name,
        mode=rt.permission.mode,
        mode_fell_back=fell_back,
        pins=pin_views(rt.assembler.pinned),
        areas=area_views(rt.coop),
        unrestored_areas=tuple(f"{a.name or a.area_id}: {a.reason}" for a in rt.unrestored_areas),
        cleared=tuple(cleared),
        not_restored=tuple(not_restored),
        conversation=conversation,
        code=code,
        code_refused=refused,
        undid=point.undoes,
    )
