"""Rewinding the conversation: the session goes back to just before one of its prompts.

The rewind is a `session/rewind` event; the session's state is then rebuilt from the log with the
rewound events left out, by the same code a resume runs (`engine.agent.followers`), so the live
Agent after a rewind is what reopening the session would give. Nothing is deleted: the log, and
its transcript, keep every turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.agent.followers import Followers, rebuild_state
from engine.agent.outbox import Steering
from engine.errors import TrellisError
from engine.events import PermissionModeSet, SessionRewind, TurnStart, UserMessage
from engine.permission_mode import PermissionMode
from engine.privacy import PrivatizationLabel

if TYPE_CHECKING:
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
    """Where a turn of the history starts, and the words of its prompt."""

    turn: int
    seq: int  # its `turn/start`
    prompt: str
    label: PrivatizationLabel | None


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


async def history_turns(rt: Runtime) -> list[RewoundTurn]:
    """The turns of the session's history (rewound ones left out), oldest first, read by range."""
    turns: list[RewoundTurn] = []
    opened: TurnStart | None = None
    opened_seq = -1
    async for chunk in rt.session.chunks():
        for event in rt.rewound.effective(chunk):
            data = event.data
            if opened is not None:
                # a turn's prompt is the user/message right after its turn/start
                prompt, label = "", None
                if type(data) is UserMessage and data.source.is_user:
                    prompt, label = data.content, data.label
                turns.append(RewoundTurn(opened.turn, opened_seq, prompt, label))
                opened = None
            if type(data) is TurnStart:
                opened, opened_seq = data, event.seq
    if opened is not None:
        turns.append(RewoundTurn(opened.turn, opened_seq, "", None))
    return turns


def _numbers(turns: Sequence[RewoundTurn]) -> str:
    if not turns:
        return "the session has no turn yet"
    shown = ", ".join(str(t.turn) for t in turns[-10:])
    more = f" (and {len(turns) - 10} earlier)" if len(turns) > 10 else ""
    return f"its history holds turns {shown}{more}"


async def rewind_conversation(rt: Runtime, to_turn: int) -> RewindResult:
    """Rewind `rt`'s session to just before turn `to_turn`'s prompt (between turns only: the
    Agent checks). Raises `RewindError` for a turn not in the history; appends nothing then."""
    from engine.agent.views import PinView, area_views

    waiting = len(rt.outbox)  # what was staged before the rewind is dropped; what comes after stays
    turns = await history_turns(rt)
    target = next((t for t in turns if t.turn == to_turn), None)
    if target is None:
        raise RewindError(f"cannot rewind to turn {to_turn}: {_numbers(turns)}")
    # The state is rebuilt before the rewind is appended, as if it stood at the log's end: a
    # read that fails leaves the session as it was. An event appended meanwhile (an idle
    # inject) moves the end: built again.
    while True:
        end = rt.session.next_seq
        rewound = rt.rewound.copy()
        rewound.add(target.seq, end)
        start = Followers.starting(rt.assembler, rt.permission, rt.context.gateway_type)
        state = await rebuild_state(rt.session, rewound, start)
        if rt.session.next_seq == end:
            break
    staged = rt.outbox.drain()
    cleared = [s.text for s in rt.kept_steering]
    cleared += [i.text if isinstance(i, Steering) else i.content for i in staged[:waiting]]
    if rt.kept_steering:
        rt.kept_steering = []
        rt.queued_changed()
    payload = SessionRewind(
        to_turn=to_turn,
        to_seq=target.seq,
        conversation=True,
        prompt=target.prompt,
        label=target.label,
    )
    bound = rt.assembler.binding.name
    event = rt.session.append(payload)
    rt.rewound = rewound
    rt.adopt(state)
    restored = rt.assembler.grants.active
    if restored is None or restored.model != bound:
        # Bound again, so the log says which model the session goes on with and the store's
        # record (the session list, a fork) names it. A log whose first binding came after that
        # turn (bound when it was resumed) keeps the model in force.
        rt.record(rt.assembler.grants.bind(bound if restored is None else restored.model))
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
    return RewindResult(
        to_turn=to_turn,
        to_seq=target.seq,
        seq=event.seq,
        prompt=target.prompt,
        model=rt.assembler.binding.name,
        mode=rt.permission.mode,
        mode_fell_back=fell_back,
        pins=tuple(PinView(id=i, text=t) for i, t in rt.assembler.pins.pins),
        areas=area_views(rt.coop),
        unrestored_areas=tuple(f"{a.name or a.area_id}: {a.reason}" for a in rt.unrestored_areas),
        cleared=tuple(cleared),
    )
