"""A permission decision belongs to a waiting tool call of the open step."""

from __future__ import annotations

import pytest

from engine.events import (
    PermissionDecision,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnStart,
    make_event,
)
from engine.invariants import InvariantError, LogState


def check(*payloads: object) -> LogState:
    return LogState.of(make_event(p, seq, 0.0) for seq, p in enumerate(payloads))  # type: ignore[arg-type]


CALL = ToolCallRecord(turn=1, step=1, call_id="c1", name="run_shell")
RESULT = ToolResultRecord(turn=1, step=1, call_id="c1", content="ok")
DECISION = PermissionDecision(call_id="c1", decision="allow")


def test_a_decision_between_its_call_and_result_is_accepted() -> None:
    check(TurnStart(turn=1), StepStart(turn=1, step=1), CALL, DECISION, RESULT)


@pytest.mark.parametrize(
    ("log", "rule"),
    [
        ((TurnStart(turn=1), DECISION), "permission/decision outside a step"),
        (
            (
                TurnStart(turn=1),
                StepStart(turn=1, step=1),
                CALL,
                RESULT,
                StepEnd(turn=1, step=1),
                DECISION,
            ),
            "permission/decision outside a step",
        ),
        ((TurnStart(turn=1), StepStart(turn=1, step=1), DECISION), "no tool/call 'c1'"),
        (
            (TurnStart(turn=1), StepStart(turn=1, step=1), CALL, RESULT, DECISION),
            "after its result",
        ),
    ],
)
def test_a_stray_decision_is_rejected(log: tuple[object, ...], rule: str) -> None:
    with pytest.raises(InvariantError, match=rule) as raised:
        check(*log)
    assert raised.value.seq == len(log) - 1
