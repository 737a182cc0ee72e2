"""Cache-aware eviction: the oldest history groups go in batches, so requests share their prefix.

The spec's rules hold at every request (whole groups, at most the window, within the cap, the
current turn whole with its continuation); what changes is that history is dropped a batch at a
time and never comes back, so between two batches each request only grows at its tail.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context.budget import Budget
from engine.context.floor import Block, Layer
from engine.context.orchestrator import AssembledContext, ContextOrchestrator
from engine.context.provenance import ItemKind
from engine.message import Source
from tests.orchestrator.session import Session

FLOOR = (Block.of(Layer.identity, "system_prompt", "You are Trellis."),)


def step(
    orchestrator: ContextOrchestrator, session: Session, turn: int, budget: Budget
) -> AssembledContext:
    return orchestrator.assemble(
        session.items,
        session.provenances,
        current_turn=turn,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=budget,
    )


def history_groups(result: AssembledContext) -> list[int]:
    """The turns of the history groups a request kept, oldest first."""
    current = set(result.current_indices)
    turns: list[int] = []
    for index, provenance in zip(result.indices, result.provenances, strict=True):
        if index not in current and provenance.turn is not None and provenance.turn not in turns:
            turns.append(provenance.turn)
    return turns


def test_a_full_window_drops_a_quarter_of_it_at_once_then_grows_again() -> None:
    session, orchestrator = Session(), ContextOrchestrator()
    budget = Budget(turn_window=8)
    kept: list[list[int]] = []
    evicted: list[int] = []
    for turn in range(1, 16):
        session.add(f"question {turn}", turn=turn)
        result = step(orchestrator, session, turn, budget)
        kept.append(history_groups(result))
        evicted.append(result.evicted)
        session.add(f"answer {turn}", kind=ItemKind.assistant, turn=turn)
    # turns 1-9 keep every earlier turn (8 at turn 9); turn 10 would hold 9: two go (a quarter)
    assert kept[8] == list(range(1, 9))
    assert (kept[9], evicted[9]) == (list(range(3, 10)), 2)
    assert (kept[10], evicted[10]) == (list(range(3, 11)), 0)
    assert (kept[11], evicted[11]) == (list(range(5, 12)), 2)
    assert [t for t, e in enumerate(evicted, start=1) if e] == [10, 12, 14]


def test_one_group_at_a_time_when_the_batch_is_one() -> None:
    session, orchestrator = Session(), ContextOrchestrator()
    budget = Budget(turn_window=4, eviction_batch=1)
    for turn in range(1, 9):
        session.add(f"question {turn}", turn=turn)
        result = step(orchestrator, session, turn, budget)
        assert history_groups(result) == list(range(max(1, turn - 4), turn))
        assert result.evicted == (1 if turn > 5 else 0)
        session.add(f"answer {turn}", kind=ItemKind.assistant, turn=turn)


def test_an_evicted_group_never_returns() -> None:
    """History evicted stays out though a later request has room for it again: it would come
    back at the front of history and rewrite the whole request after it."""
    session, orchestrator = Session(), ContextOrchestrator()
    for turn in range(1, 8):
        session.turn(turn)
    session.add("now", turn=8)
    narrow = step(orchestrator, session, 8, Budget(turn_window=4))
    wide = step(orchestrator, session, 8, Budget(turn_window=8))
    assert history_groups(narrow) == history_groups(wide) == [4, 5, 6, 7]


def test_a_detach_before_the_kept_history_starts_eviction_afresh() -> None:
    session, orchestrator = Session(), ContextOrchestrator()
    budget = Budget(turn_window=4, eviction_batch=2)
    for turn in range(1, 6):
        session.turn(turn)
    session.add("now", turn=6)
    first = step(orchestrator, session, 6, budget)
    assert (history_groups(first), first.evicted) == ([3, 4, 5], 2)
    sliding = Budget(turn_window=4, eviction_batch=1)
    orchestrator.note_detached(len(session.items))  # a cut after history changes nothing
    assert history_groups(step(orchestrator, session, 6, sliding)) == [3, 4, 5]
    orchestrator.note_detached(0)  # e.g. a rebind to another provider re-indexes everything
    assert history_groups(step(orchestrator, session, 6, sliding)) == [2, 3, 4, 5]


def test_a_superseded_render_before_the_history_stays_until_the_next_batch() -> None:
    """An Area's latest render is reserved; once its turn is evicted it sits right after the
    floor. When the Area renders again, dropping the old render there would rewrite everything
    after the floor: it is held until the next eviction batch breaks the prefix anyway."""
    session, orchestrator = Session(), ContextOrchestrator()
    budget = Budget(turn_window=4, eviction_batch=2)
    plan = {"plan"}

    def at(turn: int) -> AssembledContext:
        return orchestrator.assemble(
            session.items,
            session.provenances,
            current_turn=turn,
            retained_owners=frozenset(plan),
            floor=FLOOR,
            budget=budget,
        )

    session.add("question 1", turn=1)
    first = session.add("plan v1", kind=ItemKind.area, turn=1, owner="plan")
    session.add("answer 1", kind=ItemKind.assistant, turn=1)
    for turn in range(2, 7):
        session.turn(turn)
    session.add("question 7", turn=7)
    evicting = at(7)
    assert evicting.evicted == 3  # six past turns: three go, the next batch is two turns away
    assert evicting.indices[0] == first  # reserved, before the kept history
    second = session.add("plan v2", kind=ItemKind.area, turn=7, owner="plan")
    again = at(7)
    assert again.indices[: len(evicting.indices)] == evicting.indices  # v1 held: a prefix
    assert second in again.indices
    session.add("answer 7", kind=ItemKind.assistant, turn=7)
    session.add("question 8", turn=8)
    assert at(8).indices[0] == first  # still no batch
    session.add("answer 8", kind=ItemKind.assistant, turn=8)
    session.add("question 9", turn=9)
    batch = at(9)
    assert batch.evicted == 2
    assert batch.released == 1
    assert first not in batch.indices


session_plans = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=3),  # tool steps in the turn
        st.integers(min_value=1, max_value=120),  # characters of each item
        st.booleans(),  # context injected before the prompt
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(
    session_plans,
    st.integers(min_value=0, max_value=12),
    st.none() | st.integers(min_value=1, max_value=6),
    st.integers(min_value=400, max_value=4_000),
)
def test_batch_eviction_keeps_the_rules_and_the_prefix(
    plan: list[tuple[int, int, bool]], window: int, batch: int | None, cap: int
) -> None:
    session, orchestrator = Session(), ContextOrchestrator()
    budget = Budget(turn_window=window, eviction_batch=batch, char_cap=cap)
    previous: list[int] | None = None
    for turn, (steps, size, injected) in enumerate(plan, start=1):
        first = len(session.items)
        if injected:
            session.add("i" * size, source=Source("plugin"))  # joins this turn's group
        session.add("q" * size, turn=turn)
        for number in range(steps + 1):
            try:
                result = step(orchestrator, session, turn, budget)
            except Exception:
                return  # the current turn alone exceeds the cap: the turn ends `budget`
            kept = history_groups(result)
            # whole groups, the newest run, at most the window, within the cap
            assert kept == list(range(turn - len(kept), turn))
            assert len(kept) <= max(window, 0)
            assert result.figures.chars <= budget.cap
            # the current turn is whole, continuation included
            assert set(range(first, len(session.items))) <= set(result.indices)
            if previous is not None:
                if result.evicted:
                    gone = [t for t in previous if t not in kept]
                    assert len(gone) >= min(budget.batch, len(previous)) or not kept
                else:
                    assert kept[: len(previous)] == previous  # history only grew at its tail
            previous = kept
            if number < steps:
                session.add("c" * size, kind=ItemKind.assistant, turn=turn)
                session.add("r" * size, kind=ItemKind.tool_result, turn=turn)
        session.add("a" * size, kind=ItemKind.assistant, turn=turn)
