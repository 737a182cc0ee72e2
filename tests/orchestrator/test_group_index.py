"""The incremental GroupIndex equals one rebuilt from scratch after any appends and detaches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context.orchestrator import GroupIndex
from engine.context.provenance import ItemKind
from engine.message import Source
from tests.orchestrator.session import Session

OWNERS = ("plan", "watch", "sub")

append = st.tuples(
    st.just("append"),
    st.sampled_from(list(ItemKind)),
    st.none() | st.integers(0, 3),  # turn step: None = between turns, else advance by 0..3
    st.none() | st.sampled_from(OWNERS),
    st.text(alphabet="ab é", max_size=12),
)
detach = st.tuples(st.just("detach"), st.integers(min_value=-2, max_value=50))
sync = st.tuples(st.just("sync"))
operations = st.lists(st.one_of(append, append, append, detach, sync), max_size=80)


def state(index: GroupIndex) -> tuple[object, ...]:
    """Everything the index knows, in comparable form."""
    return (
        [
            (g.turn, g.start, list(g.members), g.fixed_chars, list(g.rendered))
            for g in index._groups
        ],
        list(index._starts),
        dict(index._first_of_turn),
        list(index._pending),
        list(index._always),
        {owner: list(ids) for owner, ids in index._renders.items()},
        list(index._provenances),
        list(index._chars),
        list(index._labels),
    )


@settings(max_examples=400, deadline=None)
@given(operations, st.booleans())
def test_incremental_index_equals_a_rebuild(ops: list[tuple[object, ...]], monotonic: bool) -> None:
    session = Session()
    index = GroupIndex()
    turn = 1
    for op in ops:
        match op:
            case ("append", ItemKind() as kind, step, owner, str() as text):
                item_turn: int | None = None
                if isinstance(step, int):
                    turn = turn + step if monotonic else max(1, turn + step - 2)
                    item_turn = turn
                session.add(
                    text,
                    kind=kind,
                    turn=item_turn,
                    owner=owner if isinstance(owner, str) else None,
                    source=Source("tool"),
                )
            case ("detach", int() as at):
                session.detach(max(at, 0))
                index.note_detached(at)
            case ("sync",):
                index.sync(session.items, session.provenances)
                fresh = GroupIndex()
                fresh.sync(session.items, session.provenances)
                assert state(index) == state(fresh)
    index.sync(session.items, session.provenances)
    fresh = GroupIndex()
    fresh.sync(session.items, session.provenances)
    assert state(index) == state(fresh)
