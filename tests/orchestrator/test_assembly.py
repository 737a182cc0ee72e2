"""Assembly and governors (docs/spec/context-orchestration.md, "Governors")."""

from __future__ import annotations

import pytest

from engine.context.budget import Budget, ContextBudgetExceededError
from engine.context.floor import Block, Layer, prefix_digest
from engine.context.orchestrator import AssembledContext, ContextOrchestrator
from engine.context.provenance import ItemKind
from engine.events import Figures
from engine.message import Source
from tests.orchestrator.session import Session

IDENTITY = Block.of(Layer.identity, "system_prompt", "You are Trellis.")  # 16 characters
FLOOR = (IDENTITY,)
PLAIN_TURN = (
    75  # {"role":"user","content":"question"} 36 + {"role":"assistant","content":"answer"} 39
)
NOW = 31  # {"role":"user","content":"now"}


def assemble(
    orchestrator: ContextOrchestrator, session: Session, *, current_turn: int, budget: Budget
) -> AssembledContext:
    return orchestrator.assemble(
        session.items,
        session.provenances,
        current_turn=current_turn,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=budget,
    )


def past_turns(count: int) -> Session:
    session = Session()
    for turn in range(1, count + 1):
        session.turn(turn)
    return session


def test_turn_window_of_one_keeps_only_the_newest_group() -> None:
    session = past_turns(5)
    now = session.add("now", turn=6)
    result = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=6,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(turn_window=1),
    )
    assert result.indices == (8, 9, now)
    assert (result.groups_kept, result.groups_dropped) == (1, 4)
    assert result.figures == Figures(
        chars=16 + PLAIN_TURN + NOW, cap=96_000, groups_kept=1, groups_dropped=4, reserved=16 + NOW
    )


@pytest.mark.parametrize("window", [0, -3])
def test_turn_window_of_zero_or_less_keeps_only_the_current_turn(window: int) -> None:
    session = past_turns(5)
    now = session.add("now", turn=6)
    result = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=6,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(turn_window=window),
    )
    assert result.indices == (now,)
    assert (result.groups_kept, result.groups_dropped) == (0, 5)


def test_default_window_keeps_twenty_groups() -> None:
    session = past_turns(25)
    session.add("now", turn=26)
    result = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=26,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(eviction_batch=1),
    )
    assert (result.groups_kept, result.groups_dropped) == (20, 5)
    assert result.indices[0] == 10  # turn 6's prompt: turns 6..25 are kept whole
    assert result.figures.chars == 16 + 20 * PLAIN_TURN + NOW
    # Trellis's eviction batches (docs/spec/context-orchestration.md): evicting a batch (a
    # quarter of the window) leaves room for as many new turns
    batched = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=26,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(),
    )
    assert (batched.groups_kept, batched.groups_dropped) == (16, 9)


def test_a_cap_one_character_too_small_raises_and_one_more_passes() -> None:
    session = Session()
    session.add("hello", turn=1)  # 33 characters; with the floor, 49 are needed
    orchestrator = ContextOrchestrator()
    with pytest.raises(ContextBudgetExceededError) as raised:
        orchestrator.assemble(
            session.items,
            session.provenances,
            current_turn=1,
            retained_owners=frozenset(),
            floor=FLOOR,
            budget=Budget(char_cap=48),
        )
    assert (raised.value.needed, raised.value.allowed) == (49, 48)
    result = orchestrator.assemble(
        session.items,
        session.provenances,
        current_turn=1,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(char_cap=49),
    )
    assert result.figures.chars == 49
    assert result.figures.cap == 49


def test_an_oversized_current_turn_raises_with_the_needed_size() -> None:
    session = past_turns(2)
    big = session.add("x" * 100_000, turn=3)  # 100,028 characters as JSON
    with pytest.raises(ContextBudgetExceededError) as raised:
        ContextOrchestrator().assemble(
            session.items,
            session.provenances,
            current_turn=3,
            retained_owners=frozenset(),
            floor=FLOOR,
            budget=Budget(),
        )
    error = raised.value
    assert (error.needed, error.allowed) == (100_044, 96_000)
    assert error.breakdown.floor == 16
    assert error.breakdown.current_turn == 100_028
    assert error.breakdown.largest_index == big
    assert "100,044" in str(error)
    assert "96,000" in str(error)
    assert f"Context index {big}" in str(error)


def test_the_cap_derives_from_the_window_less_the_reply_unless_configured() -> None:
    """No window: the configured cap, else 96,000. A window: three characters a token of the
    window less the reply's reserve (4,096 tokens, at most a quarter of the window), or the
    configured cap when it is smaller."""
    assert (Budget().cap, Budget().cap_source) == (96_000, "default")
    assert (Budget(char_cap=50_000).cap, Budget(char_cap=50_000).cap_source) == (
        50_000,
        "configured",
    )
    assert Budget(context_window=32_768).cap == 3 * (32_768 - 4_096)
    wide = Budget(context_window=200_000)
    assert (wide.cap, wide.cap_source) == (3 * (200_000 - 4_096), "window")
    assert wide.cap > 96_000  # a large window is not held to the default cap
    assert Budget(context_window=8_192).cap == 3 * (8_192 - 2_048)
    assert Budget(context_window=32_768, generation_window=4_096).cap == 3 * (4_096 - 1_024)
    assert Budget(context_window=8_192, generation_window=40_000).cap == 3 * (40_000 - 4_096)
    assert Budget(context_window=8_192, generation_window=40_000).window == 40_000
    smaller = Budget(char_cap=50_000, context_window=200_000)
    assert (smaller.cap, smaller.cap_source) == (50_000, "configured")
    larger = Budget(char_cap=900_000, context_window=200_000)
    assert (larger.cap, larger.cap_source) == (3 * (200_000 - 4_096), "window")


def test_the_window_derived_cap_bounds_history() -> None:
    session = past_turns(5)
    session.add("now", turn=6)
    orchestrator = ContextOrchestrator()
    by_context = assemble(
        orchestrator,
        session,
        current_turn=6,
        budget=Budget(context_window=66, eviction_batch=1),
    )
    # cap 3 x (66 - 16) = 150: 16 + 31 reserved, one 75-character group fits (122), a second
    # does not (197); evicting one group at a time keeps it
    assert (by_context.figures.cap, by_context.groups_kept) == (150, 1)
    assert by_context.context_window == 66
    assert by_context.figures.window == 66
    by_generation = assemble(
        orchestrator,
        session,
        current_turn=6,
        budget=Budget(context_window=1_000, generation_window=40),
    )
    assert (by_generation.figures.cap, by_generation.groups_kept) == (90, 0)
    assert by_generation.groups_dropped == 5


def test_history_stops_at_the_first_group_that_does_not_fit() -> None:
    session = Session()
    session.turn(1, prompt="a", reply="b")  # 63 characters
    session.turn(2, prompt="x" * 500)  # 567 characters
    session.add("now", turn=3)
    result = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=3,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(char_cap=16 + NOW + 63 + 10),  # turn 1 alone would fit; turn 2 does not
    )
    assert result.indices == (4,)
    assert (result.groups_kept, result.groups_dropped) == (0, 2)


def test_the_reserved_lane_survives_past_the_turn_window() -> None:
    session = Session()
    session.add("question", turn=1)
    plan = session.add("plan: step one", kind=ItemKind.area, turn=1, owner="plan-1")
    session.add("answer", kind=ItemKind.assistant, turn=1)
    promoted = session.add("Subtask fix: done", kind=ItemKind.promoted, turn=2, source=None)
    for turn in range(2, 10):
        session.turn(turn)
    now = session.add("now", turn=10)
    orchestrator = ContextOrchestrator()
    retained = orchestrator.assemble(
        session.items,
        session.provenances,
        current_turn=10,
        retained_owners=frozenset({"plan-1"}),
        floor=FLOOR,
        budget=Budget(turn_window=1),
    )
    assert retained.indices == (plan, promoted, now - 2, now - 1, now)
    assert retained.reserved_indices == (plan, promoted)
    assert retained.current_indices == (now,)
    plan_chars = 28 + len("plan: step one")
    promoted_chars = 28 + len("Subtask fix: done")
    assert retained.figures.reserved == 16 + plan_chars + promoted_chars + NOW
    held = orchestrator.assemble(
        session.items,
        session.provenances,
        current_turn=10,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(turn_window=1),
    )
    # held renders (docs/spec/context-orchestration.md): sent before the history, it stays
    # until the next eviction batch (or collection)
    assert held.indices == retained.indices
    retired = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=10,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(turn_window=1),
    )
    assert retired.indices == (promoted, now - 2, now - 1, now)  # the plan aged out with turn 1


def test_context_injected_between_turns_joins_the_next_turns_group() -> None:
    session = past_turns(1)
    between = session.add("a note", source=Source("plugin"))
    turn_two = session.turn(2)
    pre_prompt = session.add("another note", source=Source("plugin"))
    query = session.add("now", turn=3)
    result = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=3,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(turn_window=1),
    )
    assert result.indices == (between, *turn_two, pre_prompt, query)
    assert result.current_indices == (pre_prompt, query)


def test_the_current_turn_is_kept_whole_with_its_continuation() -> None:
    session = past_turns(3)
    query = session.add("read it", turn=4)
    call = session.add("calling", kind=ItemKind.assistant, turn=4)
    result_item = session.add("file text", kind=ItemKind.tool_result, turn=4)
    steer = session.add("also this", turn=4, source=Source("plugin"))
    result = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=4,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(turn_window=0),
    )
    assert result.indices == (query, call, result_item, steer)


def test_returned_items_are_copies_in_context_order() -> None:
    session = past_turns(2)
    session.add("now", turn=3)
    session.items[0]["extra"] = {"nested": [1]}
    result = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=3,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(),
    )
    assert list(result.items) == [session.items[i] for i in result.indices]
    assert list(result.indices) == sorted(result.indices)
    result.items[0]["extra"]["nested"].append(2)
    assert session.items[0]["extra"] == {"nested": [1]}


def test_the_result_carries_the_floor_digest_and_step_start() -> None:
    session = past_turns(1)
    session.add("now", turn=2)
    result = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=2,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(),
    )
    assert result.system == "You are Trellis."
    assert result.prefix_digest == prefix_digest(FLOOR)
    step = result.step_start(turn=2, step=1)
    assert step.floor == (IDENTITY.content_hash,)
    assert step.prefix_digest == result.prefix_digest
    assert step.figures == result.figures


def test_a_reported_detach_is_followed() -> None:
    session = past_turns(4)
    session.add("now", turn=5)
    orchestrator = ContextOrchestrator()
    before = orchestrator.assemble(
        session.items,
        session.provenances,
        current_turn=5,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(),
    )
    assert before.groups_dropped == 0
    session.detach(3)  # mid-group: turn 2 loses its reply
    orchestrator.note_detached(3)
    promoted = session.add("Summary", kind=ItemKind.summary, source=None)
    now = session.add("now", turn=5)
    after = orchestrator.assemble(
        session.items,
        session.provenances,
        current_turn=5,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(turn_window=1),
    )
    assert after.indices == (2, promoted, now)
    assert after.reserved_indices == (promoted,)


def test_misaligned_items_and_provenances_are_refused() -> None:
    session = past_turns(1)
    with pytest.raises(ValueError, match="aligned"):
        ContextOrchestrator().assemble(
            session.items[:1],
            session.provenances,
            current_turn=2,
            retained_owners=frozenset(),
            floor=FLOOR,
            budget=Budget(),
        )


def test_an_unreported_rewrite_of_the_tail_is_caught() -> None:
    session = past_turns(3)
    orchestrator = ContextOrchestrator()
    assemble(orchestrator, session, current_turn=4, budget=Budget())
    session.detach(2)
    session.turn(7)
    session.turn(8)
    now = session.add("now", turn=9)
    result = assemble(orchestrator, session, current_turn=9, budget=Budget())
    assert result.indices == tuple(range(now + 1))
    assert (result.groups_kept, result.groups_dropped) == (3, 0)
