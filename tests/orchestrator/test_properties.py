"""Properties of assembly: whole newest groups, nothing reserved cut, Context order kept."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context.budget import Budget, ContextBudgetExceededError, item_chars
from engine.context.floor import Block, Layer
from engine.context.orchestrator import AssembledContext, ContextOrchestrator
from engine.context.provenance import ItemKind, Provenance
from engine.message import Source
from tests.orchestrator.session import Session

FLOOR = (Block.of(Layer.identity, "system_prompt", "You are Trellis."),)
OWNERS = ("plan", "watch")
ALWAYS = (ItemKind.promoted, ItemKind.summary)
IN_TURN_KINDS = (
    ItemKind.assistant,
    ItemKind.tool_result,
    ItemKind.message,
    ItemKind.area,
    ItemKind.promoted,
)

texts = st.text(alphabet="abcé ", max_size=40)


@dataclass(frozen=True, slots=True)
class Case:
    session: Session
    current_turn: int
    retained: frozenset[str]
    budget: Budget


@st.composite
def in_turn_item(draw: st.DrawFn, session: Session, turn: int) -> None:
    kind = draw(st.sampled_from(IN_TURN_KINDS))
    owner = (
        draw(st.sampled_from(OWNERS))
        if kind is ItemKind.area
        else draw(st.none() | st.sampled_from(OWNERS))
    )
    if kind in ALWAYS:
        owner = None
    session.add(draw(texts), kind=kind, turn=turn, owner=owner, source=Source("tool"))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    session = Session()
    past = draw(st.integers(min_value=0, max_value=8))
    for turn in range(1, past + 2):
        for _ in range(draw(st.integers(min_value=0, max_value=2))):  # between turns
            session.add(draw(texts), source=Source("plugin"))
        if turn == past + 1 and draw(st.booleans()):
            break  # the current turn has only its pre-prompt contexts so far
        session.add(draw(texts), turn=turn)
        for _ in range(draw(st.integers(min_value=0, max_value=4))):
            draw(in_turn_item(session, turn))
    return Case(
        session=session,
        current_turn=past + 1,
        retained=draw(st.frozensets(st.sampled_from(OWNERS))),
        budget=Budget(
            turn_window=draw(st.integers(min_value=-1, max_value=6)),
            char_cap=draw(st.integers(min_value=1, max_value=2_000)),
        ),
    )


def reference_groups(
    provenances: list[Provenance], current_turn: int
) -> tuple[list[list[int]], list[int]]:
    """Past-turn groups and the current turn, computed the slow, obvious way."""
    effective: dict[int, int | None] = {}
    following: int | None = None
    for index in reversed(range(len(provenances))):
        provenance = provenances[index]
        if provenance.kind in ALWAYS:
            continue
        if provenance.turn is not None:
            following = provenance.turn
        effective[index] = following
    groups: list[list[int]] = []
    current: list[int] = []
    last: int | None = None
    for index in sorted(effective):
        turn = effective[index]
        if turn is None or turn >= current_turn:
            current.append(index)
        elif groups and last == turn:
            groups[-1].append(index)
        else:
            groups.append([index])
        last = turn
    return groups, current


def assemble(case: Case, orchestrator: ContextOrchestrator | None = None) -> AssembledContext:
    return (orchestrator or ContextOrchestrator()).assemble(
        case.session.items,
        case.session.provenances,
        current_turn=case.current_turn,
        retained_owners=case.retained,
        floor=FLOOR,
        budget=case.budget,
    )


@settings(max_examples=200, deadline=None)
@given(cases())
def test_history_is_a_newest_run_of_whole_groups_and_nothing_reserved_is_cut(case: Case) -> None:
    items, provenances = case.session.items, case.session.provenances
    groups, current = reference_groups(provenances, case.current_turn)
    # The reserved lane holds each retained Area's latest render, not everything the Area owns:
    # a superseded render (or an item owned by an exclusive Area) is ordinary history that ages
    # out with its turn group, so renders cannot pile up in the lane. Every item here has its own
    # seq, so an Area's latest render is its last rendered item.
    latest: dict[str, int] = {}
    for index, provenance in enumerate(provenances):
        if provenance.kind is ItemKind.area and provenance.owner is not None:
            latest[provenance.owner] = index
    lane = {index for owner, index in latest.items() if owner in case.retained}

    def reserved_item(index: int) -> bool:
        return provenances[index].kind in ALWAYS or index in lane

    def cost(indices: list[int]) -> int:
        return sum(item_chars(items[i]) for i in indices if not reserved_item(i))

    reserved = [i for i in range(len(items)) if reserved_item(i)]
    needed = (
        sum(len(b.text) for b in FLOOR)
        + sum(item_chars(items[i]) for i in reserved)
        + cost(current)
    )
    if needed > case.budget.cap:
        with pytest.raises(ContextBudgetExceededError) as raised:
            assemble(case)
        assert (raised.value.needed, raised.value.allowed) == (needed, case.budget.cap)
        return
    result = assemble(case)
    # Context order, copies equal to the Context's items
    assert list(result.indices) == sorted(set(result.indices))
    assert list(result.items) == [items[i] for i in result.indices]
    # the reserved lane and the current turn are never cut
    sent = set(result.indices)
    assert set(reserved) <= sent
    assert set(current) <= sent
    assert list(result.reserved_indices) == reserved
    # history: exactly the newest `kept` whole groups
    kept = result.groups_kept
    assert kept + result.groups_dropped == len(groups)
    assert kept <= max(case.budget.turn_window, 0)
    newest = groups[len(groups) - kept :]
    history = sent - set(reserved) - set(current)
    assert history == {i for g in newest for i in g if not reserved_item(i)}
    used = needed + sum(cost(g) for g in newest)
    assert result.figures.chars == used <= case.budget.cap
    assert result.figures.reserved == needed
    if kept < len(groups) and kept < case.budget.turn_window:
        assert used + cost(groups[len(groups) - kept - 1]) > case.budget.cap  # the first misfit


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.sampled_from(list(ItemKind)),
            st.none() | st.integers(1, 6),
            st.none() | st.sampled_from(OWNERS),
            texts,
        ),
        st.tuples(st.just("detach"), st.integers(min_value=0, max_value=40)),
        st.tuples(
            st.just("assemble"),
            st.integers(min_value=1, max_value=7),
            st.frozensets(st.sampled_from(OWNERS)),
        ),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(operations)
def test_the_incremental_index_matches_a_fresh_one(ops: list[tuple[object, ...]]) -> None:
    session = Session()
    orchestrator = ContextOrchestrator()
    for op in ops:
        match op:
            case ("append", ItemKind() as kind, turn, owner, str() as text):
                assert turn is None or isinstance(turn, int)
                assert owner is None or isinstance(owner, str)
                session.add(text, kind=kind, turn=turn, owner=owner)
            case ("detach", int() as at):
                session.detach(at)
                orchestrator.note_detached(at)
            case ("assemble", int() as turn, frozenset() as retained):
                case = Case(
                    session=session,
                    current_turn=turn,
                    retained=frozenset(str(o) for o in retained),
                    budget=Budget(turn_window=3, char_cap=10_000),
                )
                # what earlier requests evicted is the orchestrator's state, not the index's
                orchestrator.restart_eviction()
                incremental, fresh = assemble(case, orchestrator), assemble(case)
                assert incremental.indices == fresh.indices
                assert incremental.figures == fresh.figures
                assert incremental.reserved_indices == fresh.reserved_indices
                assert incremental.label == fresh.label
