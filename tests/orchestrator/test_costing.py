"""Items are costed when a budget first asks, once (issue 11): a resumed long session does not
serialize its whole history again before its first request, and the figures stay the same."""

from __future__ import annotations

import pytest

import engine.context.orchestrator as orchestrator_module
from engine.context.budget import Budget, item_chars
from engine.context.orchestrator import ContextOrchestrator
from engine.context.provenance import ItemKind
from engine.gateway.base import NativeContent
from engine.message import Source
from tests.orchestrator.test_assembly import FLOOR, PLAIN_TURN, assemble, past_turns


@pytest.fixture
def costed(monkeypatch: pytest.MonkeyPatch) -> list[NativeContent]:
    """Every item the orchestrator costs, in order."""
    seen: list[NativeContent] = []

    def counting(item: NativeContent) -> int:
        seen.append(item)
        return item_chars(item)

    monkeypatch.setattr(orchestrator_module, "item_chars", counting)
    return seen


def test_only_the_groups_a_request_may_hold_are_costed(costed: list[NativeContent]) -> None:
    session = past_turns(1_000)
    session.add("now", turn=1_001)
    result = assemble(
        ContextOrchestrator(), session, current_turn=1_001, budget=Budget(turn_window=3)
    )
    assert result.groups_kept == 3
    # the current turn and the three newest groups: the window stops there
    assert len(costed) == 1 + 2 * 3
    assert result.figures.chars == sum(b.chars for b in FLOOR) + 3 * PLAIN_TURN + 31


def test_each_item_is_costed_once(costed: list[NativeContent]) -> None:
    session = past_turns(50)
    orchestrator = ContextOrchestrator()
    for turn in range(51, 61):
        session.add("now", turn=turn)
        assemble(orchestrator, session, current_turn=turn, budget=Budget(turn_window=5))
        session.add("answer", kind=ItemKind.assistant, turn=turn, source=Source("model", "m"))
    assert len({id(item) for item in costed}) == len(costed)
