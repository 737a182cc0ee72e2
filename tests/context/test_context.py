"""Context: one item per emplaced thing, Python slice rules, provenance aligned through cuts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.context import Context, ItemKind, Provenance
from engine.gateway.base import GatewayType
from engine.message import USER, Message, Role, ToolCall, ToolResult


def prov(seq: int) -> Provenance:
    return Provenance(kind=ItemKind.message, seq=seq, source=USER)


def filled(n: int, gateway_type: GatewayType = GatewayType.scripted) -> Context:
    context = Context(gateway_type)
    for i in range(n):
        context.emplace_message(Message(Role.user, f"m{i}"), prov(i))
    return context


@pytest.mark.parametrize("gateway_type", list(GatewayType))
def test_one_item_per_message_assistant_and_tool_result(gateway_type: GatewayType) -> None:
    context = Context(gateway_type)
    assert context.gateway_type is gateway_type
    assert context.codec.gateway_type is gateway_type
    calls = (ToolCall("c1", "read_file", {"path": "a"}), ToolCall("c2", "list_files", {}))
    assert context.emplace_message(Message(Role.user, "q"), prov(0)) == 0
    assert context.emplace_assistant("", calls, Provenance(kind=ItemKind.assistant)) == 1
    for i, call in enumerate(calls):
        result = ToolResult(call.id, f"r{i}")
        context.emplace_tool_result(result, call.name, Provenance(kind=ItemKind.tool_result))
    assert len(context) == 4
    messages = context.messages()
    assert [m.role for m in messages] == [Role.user, Role.assistant, Role.tool, Role.tool]
    assert messages[0].source == USER  # from provenance
    assert messages[1].tool_calls == calls


@given(
    st.integers(0, 8),
    st.one_of(st.none(), st.integers(-10, 10)),
    st.one_of(st.none(), st.integers(-10, 10)),
    st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0)),
)
def test_slices_are_tuples_with_python_slice_rules(
    n: int, start: int | None, stop: int | None, step: int | None
) -> None:
    context = filled(n)
    reference = [context[i] for i in range(n)]
    sliced = context[start:stop:step]
    assert isinstance(sliced, tuple)
    assert sliced == tuple(reference[start:stop:step])


def test_indexing_follows_python_rules() -> None:
    context = filled(3)
    assert context[-1] == context[2]
    with pytest.raises(IndexError):
        context[3]


@given(st.integers(0, 6), st.integers(-9, 9))
def test_detach_tail_returns_items_with_their_provenance_and_keeps_alignment(
    n: int, index: int
) -> None:
    context = filled(n)
    items, provenances = list(context[:]), list(context.provenances)
    tail = context.detach_tail(index)
    cut = slice(index, None).indices(n)[0]
    assert tail == list(zip(items[cut:], provenances[cut:], strict=True))
    assert context[:] == tuple(items[:cut])
    assert context.provenances == tuple(provenances[:cut])


def test_append_native_carries_provenance_unstamped_and_emplace_is_stamped() -> None:
    context = filled(1)
    context.set_owner_stamp(lambda p: p.owned_by("area#1"))
    context.emplace_message(Message(Role.user, "owned"), prov(1))
    context.append_native({"role": "user", "content": "carried"}, prov(2))
    assert [p.owner for p in context.provenances] == [None, "area#1", None]


def test_serialize_copies_so_requests_cannot_bend_the_context() -> None:
    context = filled(1)
    request = context.serialize()
    request[0]["content"] = "changed"
    assert context[0]["content"] == "m0"


def test_cuts_count_what_changes_items_before_the_tail_and_appends_do_not() -> None:
    context = filled(3)
    assert context.cuts == 0
    assert context.detach_tail(3) == []  # past the end: nothing detached
    assert context.cuts == 0
    context.detach_tail(2)
    assert context.cuts == 1
    context.emplace_message(Message(Role.user, "d"), prov(3))
    assert context.cuts == 1
    context.rebind(GatewayType.scripted, context.entries())
    assert context.cuts == 2
    assert context.copy().cuts == 0  # a copy's reader kept no slice of it
