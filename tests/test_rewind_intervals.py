"""The effective history after rewinds (engine/rewind_intervals.py).

The property: for random sequences of turns, session changes (pins, model bindings, modes, a plan
Area, compactions) and rewinds, the state built from the whole log with the rewound intervals
left out equals the state built from a list that was literally truncated at each rewind's
`to_seq` and then appended to.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.agent.assembler import Assembler
from engine.agent.followers import Followers, rebuild_state
from engine.config import Config, ModelEntry
from engine.events import (
    AreaRegister,
    AreaState,
    AssistantMessage,
    CompactEnd,
    CompactStart,
    CompactSummary,
    Event,
    ModelBind,
    Payload,
    PermissionModeSet,
    PinAdd,
    PinRemove,
    SessionRewind,
    StepEnd,
    StepStart,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.gateway.base import GatewayType
from engine.invariants import InvariantError
from engine.rewind_intervals import RewoundIntervals
from engine.session import Session
from engine.tools.permission import HeadlessPolicy, PermissionBroker

CONFIG = Config(models={"other": ModelEntry(provider="scripted")})


def rewind_at(seq: int, to_seq: int) -> Event:
    from engine.events import make_event

    return make_event(SessionRewind(to_turn=1, to_seq=to_seq), seq, 0.0)


def test_intervals_merge_and_answer_membership() -> None:
    rewound = RewoundIntervals()
    assert not rewound
    assert 3 not in rewound
    rewound.note(rewind_at(10, 4))
    assert list(rewound.intervals) == [(4, 10)]
    assert [s for s in range(12) if s in rewound] == [4, 5, 6, 7, 8, 9]
    rewound.note(rewind_at(20, 15))
    rewound.note(rewind_at(25, 21))
    assert list(rewound.intervals) == [(4, 10), (15, 20), (21, 25)]
    rewound.note(rewind_at(30, 12))  # swallows the two after 12
    assert list(rewound.intervals) == [(4, 10), (12, 30)]
    rewound.note(rewind_at(40, 30))  # starts where the last ends: one interval
    assert list(rewound.intervals) == [(4, 10), (12, 40)]
    with pytest.raises(ValueError, match="comes before"):
        rewound.add(2, 35)


def test_a_code_only_rewind_takes_nothing_out() -> None:
    from engine.events import make_event

    rewound = RewoundIntervals()
    code_only = SessionRewind(to_turn=1, to_seq=0, conversation=False, code=True)
    assert not rewound.note(make_event(code_only, 5, 0.0))
    assert not rewound


def test_the_log_refuses_a_rewind_in_a_turn_or_to_no_turn() -> None:
    session = Session("s")
    with pytest.raises(InvariantError, match=r"turns are 1\.\.0"):
        session.append(SessionRewind(to_turn=1, to_seq=0))
    session.append(TurnStart(turn=1))
    with pytest.raises(InvariantError, match="while turn 1 is open"):
        session.append(SessionRewind(to_turn=1, to_seq=0))
    session.append(TurnEnd(turn=1, reason="completed"))
    with pytest.raises(InvariantError, match="not before it"):
        session.append(SessionRewind(to_turn=1, to_seq=2))


# --- the property ---------------------------------------------------------------------------------

OPS = st.lists(
    st.one_of(
        st.just(("turn",)),
        st.tuples(st.just("pin"), st.text("ab", min_size=1, max_size=3)),
        st.just(("unpin",)),
        st.tuples(st.just("model"), st.sampled_from(["scripted", "other"])),
        st.tuples(st.just("mode"), st.sampled_from(["ask", "read-only", "accept-edits"])),
        st.just(("plan",)),
        st.just(("compact",)),
        st.tuples(st.just("rewind"), st.integers(min_value=0, max_value=50)),
    ),
    max_size=30,
)


def followers() -> Followers:
    from engine.context import ContextRebuilder

    assembler = Assembler(config=CONFIG, session_id="s", workspace=Path("/"))
    return Followers(
        assembler, PermissionBroker(HeadlessPolicy()), ContextRebuilder(GatewayType.scripted)
    )


class Truncated:
    """The model the intervals must match: a list cut at each rewind, then appended to."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def take(self, event: Event) -> None:
        data = event.data
        if type(data) is SessionRewind:
            self.events = [e for e in self.events if e.seq < data.to_seq]
        self.events.append(event)

    def state(self) -> Followers:
        built = followers()
        for event in self.events:
            built.follow(event)
        return built


def state_of(built: Followers) -> tuple[object, ...]:
    rebuilder = built.rebuilder
    grant = built.assembler.grants.active
    return (
        rebuilder.context.entries(),
        dict(rebuilder.areas),
        rebuilder.cursor,
        built.assembler.pins.pins,
        None if grant is None else (grant.model, grant.epoch),
        built.permission.mode,
    )


def play(ops: list[tuple[Any, ...]]) -> tuple[Session, Truncated]:
    session = Session("s")
    truncated = Truncated()
    pins = 0
    plan_state: list[str] = []

    def append(payload: Payload) -> None:
        truncated.take(session.append(payload))

    append(ModelBind(model="scripted", grant_epoch=1))
    epoch = 1
    for op in ops:
        kind = op[0]
        if kind == "turn":
            turn = session.state.last_turn + 1
            append(TurnStart(turn=turn))
            append(UserMessage(content=f"q{turn}"))
            append(StepStart(turn=turn, step=1))
            append(AssistantMessage(turn=turn, step=1, content=f"a{turn}"))
            append(StepEnd(turn=turn, step=1))
            append(TurnEnd(turn=turn, reason="completed"))
        elif kind == "pin":
            pins += 1
            append(PinAdd(pin_id=f"pin{pins}", text=str(op[1])))
        elif kind == "unpin" and pins:
            append(PinRemove(pin_id=f"pin{pins}"))
        elif kind == "model":
            epoch += 1
            append(ModelBind(model=str(op[1]), grant_epoch=epoch))
        elif kind == "mode":
            append(PermissionModeSet(mode=op[1]))
        elif kind == "plan":
            plan_state.append("step")
            area = "plan#1"
            state = {"title": "Plan", "items": [[1, s, False] for s in plan_state]}
            if area not in truncated.state().rebuilder.areas:
                append(AreaRegister(area=area, kind="plan", name="Plan", state=state))
            else:
                append(AreaState(area=area, life="retain", flow="yielded", state=state))
        elif kind == "compact":
            length = len(truncated.state().rebuilder.context)
            if length >= 2:
                append(CompactStart(groups=1, earliest=0))
                append(CompactSummary(content=f"summary of {length}"))
                append(
                    CompactEnd(
                        earliest=0, reclaimed=tuple(range(length - 1)), carried=(length - 1,)
                    )
                )
        elif kind == "rewind":
            starts = [e for e in truncated.events if type(e.data) is TurnStart]
            if starts:
                target = starts[int(op[1]) % len(starts)]
                to_turn = target.data.turn  # type: ignore[attr-defined]
                append(SessionRewind(to_turn=to_turn, to_seq=target.seq))
    return session, truncated


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_the_intervals_build_what_truncating_and_appending_builds(
    ops: list[tuple[Any, ...]],
) -> None:
    session, truncated = play(ops)
    rewound = RewoundIntervals(session.held)
    assert [e.seq for e in rewound.effective(session.held)] == [e.seq for e in truncated.events]
    built = asyncio.run(rebuild_state(session, rewound, followers()))
    assert state_of(built) == state_of(truncated.state())
