"""CoopContext scheduling, ranges, registration, errors, ownership and events."""

from __future__ import annotations

from typing import Any

import pytest

from engine.context import (
    AreaCallbackError,
    AreaFlowState,
    AreaLifeState,
    AreaRegistrationError,
    CoopContext,
    EffectRange,
)
from engine.events import AreaCursor, AreaRegister, AreaRender, AreaState, GcCollect, Payload
from engine.message import Message
from engine.privacy import PrivacyClass, PrivatizationLabel
from tests.context.fakes import FakeArea, Harness

EXCLUSIVE = AreaFlowState.exclusive


def test_render_returns_the_same_context_every_time() -> None:
    h = Harness()
    h.area("a", renders=[["x"]])
    assert h.coop.render() is h.context
    assert h.coop.render() is h.context


def test_observe_only_after_a_non_empty_render_with_a_snapshot_of_its_own_range() -> None:
    h = Harness()
    a = h.area("a", renders=[[], ["1", "2"], ["3"]])
    h.render()
    h.say("between")
    h.render()
    assert h.calls() == [("a", "render"), ("a", "render")]  # no range yet: not observed
    h.say("after")
    h.render()
    assert a.observed == [h.context[1:3]]  # its range [1, 2] only
    assert h.coop.ranges[h.coop.area_id(a)] == EffectRange(1, 4)


def test_first_non_empty_render_fixes_earliest_later_ones_move_latest_empty_changes_nothing() -> (
    None
):
    h = Harness()
    h.say("x")
    a = h.area("a", renders=[["1"], [], ["2"]])
    h.render()
    assert h.coop.ranges[h.coop.area_id(a)] == EffectRange(1, 1)
    h.say("y")
    h.render()
    assert h.coop.ranges[h.coop.area_id(a)] == EffectRange(1, 1)
    h.render()
    assert h.coop.ranges[h.coop.area_id(a)] == EffectRange(1, 3)


def test_exclusive_keeps_the_cursor_and_returns() -> None:
    h = Harness()
    a = h.area("a", flow=EXCLUSIVE, every=["a"])
    h.area("b", every=["b"])
    assert h.render() == ["a:a"]
    assert h.coop.cursor is a
    assert h.render() == ["a:a", "a:a"]
    assert h.calls() == [("a", "render"), ("a", "observe"), ("a", "render")]


def test_only_the_area_at_the_cursor_is_observed() -> None:
    h = Harness()
    a = h.area("a", renders=[["a"]], flow=AreaFlowState.yielded)
    b = h.area("b", renders=[["b"]], flow=EXCLUSIVE)
    h.render()  # a yields, b keeps the cursor
    assert h.coop.cursor is b
    h.calls()
    h.render()
    assert h.calls() == [("b", "observe"), ("b", "render")]
    assert a.observed == []


def test_yielded_moves_on_and_a_full_yielded_pass_ends_where_it_started() -> None:
    h = Harness()
    a = h.area("a", every=["a"])
    h.area("b", every=["b"])
    c = h.area("c", flow=EXCLUSIVE, renders=[["c"]])
    h.render()
    assert h.coop.cursor is c
    c.flow = AreaFlowState.yielded
    h.calls()
    h.render()
    # from the cursor, each retained Area once, wrapping once
    assert [call for call in h.calls() if call[1] == "render"] == [
        ("c", "render"),
        ("a", "render"),
        ("b", "render"),
    ]
    assert h.coop.cursor is c
    assert a in h.coop


def test_each_retained_area_at_most_once_per_pass() -> None:
    h = Harness()
    for name in "abcd":
        h.area(name, every=[name])
    h.render()
    renders = [name for name, call in h.calls() if call == "render"]
    assert renders == ["a", "b", "c", "d"]


def test_retired_area_is_not_rendered() -> None:
    h = Harness()
    a = h.area("a", renders=[["1"]])
    b = h.area("b", every=["b"])
    h.render()
    a.retire()
    b.every = []
    h.calls()
    h.render()  # a is in an older component behind b: not collected, not rendered
    assert ("a", "render") not in h.calls()


def test_register_rejects_unhashable_area() -> None:
    class Unhashable(FakeArea):
        __hash__ = None  # type: ignore[assignment]  # what @dataclass(eq=True) leaves behind

    coop = Harness().coop
    with pytest.raises(AreaRegistrationError, match="hashable"):
        coop.register(Unhashable([], "u"))


def test_register_rejects_a_second_registration_of_the_same_instance() -> None:
    h = Harness()
    a = h.area("a")
    with pytest.raises(AreaRegistrationError, match="already registered as FakeArea#1"):
        h.coop.register(a)


def test_area_ids_are_session_unique_and_resolvable() -> None:
    h = Harness()
    a, b = h.area("a"), h.area("b")
    assert (h.coop.area_id(a), h.coop.area_id(b)) == ("FakeArea#1", "FakeArea#2")
    assert h.coop.area_by_id("FakeArea#2") is b
    a.retire()
    h.render()
    c = h.area("c")
    assert h.coop.area_id(c) == "FakeArea#3"


def test_ranges_view_is_read_only_and_keyed_by_area_id() -> None:
    h = Harness()
    a = h.area("a", renders=[["x"]])
    h.render()
    ranges: Any = h.coop.ranges
    assert dict(ranges) == {"FakeArea#1": EffectRange(0, 0)}
    assert a not in ranges  # a public view names Areas by id, like every other view
    with pytest.raises(TypeError):
        ranges["FakeArea#1"] = EffectRange(0, 1)


@pytest.mark.parametrize("callback", ["observe", "render", "promote", "gc_prologue"])
def test_an_exception_in_a_callback_names_the_area_and_leaves_the_context(callback: str) -> None:
    h = Harness()
    a = h.area("a", renders=[["1"], ["2"]])
    h.render()
    h.say("x")
    if callback in ("promote", "gc_prologue"):
        a.retire()
    before = (h.context[:], h.context.provenances)
    a.fail_in = callback
    with pytest.raises(
        AreaCallbackError, match=rf"FakeArea#1 \(FakeArea\) failed in {callback}"
    ) as info:
        h.coop.render()
    assert isinstance(info.value.__cause__, RuntimeError)
    assert (h.context[:], h.context.provenances) == before
    assert a in h.coop


def test_render_returning_bad_data_appends_nothing() -> None:
    class Bad(FakeArea):
        def render(self) -> list[Message]:
            return [Message.__new__(Message), "not a message"]  # type: ignore[list-item]

    h = Harness()
    h.say("x")
    h.coop.register(Bad(h.log, "bad"))
    with pytest.raises(AreaCallbackError, match="failed in render"):
        h.coop.render()
    assert h.texts() == ["x"]


def test_items_appended_during_an_exclusive_operation_are_owned_by_it() -> None:
    h = Harness()
    h.say("free")
    task = h.area("task", flow=EXCLUSIVE, renders=[["goal"]])
    h.render()
    h.say("owned")
    task.flow = AreaFlowState.yielded
    h.render()
    h.say("free again")
    owners = [p.owner for p in h.context.provenances]
    assert owners == [None, "FakeArea#1", "FakeArea#1", None]


def test_events_reach_the_sink() -> None:
    events: list[Payload] = []
    h = Harness()
    coop = CoopContext(h.context, events.append)
    a = FakeArea(h.log, "a", renders=[["x"]])
    a.retire_after_render = True
    coop.register(a)
    coop.render()
    coop.render()
    kinds = [type(e) for e in events]
    assert kinds == [
        AreaRegister,
        AreaState,
        AreaCursor,
        AreaRender,
        AreaState,
        GcCollect,
        AreaCursor,
    ]
    state = events[4]
    assert isinstance(state, AreaState)
    assert state.life == AreaLifeState.retired
    gc = events[5]
    assert isinstance(gc, GcCollect)
    assert (gc.areas, gc.earliest, gc.reclaimed, gc.carried) == (("FakeArea#1",), 0, (0,), ())


def test_register_with_a_failing_state_property_registers_nothing() -> None:
    class Broken(FakeArea):
        @property
        def flow_state(self) -> AreaFlowState:
            raise RuntimeError("no flow")

    events: list[Payload] = []
    h = Harness()
    coop = CoopContext(h.context, events.append)
    broken = Broken(h.log, "broken")
    with pytest.raises(AreaCallbackError, match=r"failed in flow_state"):
        coop.register(broken)
    assert broken not in coop
    assert coop.areas == ()
    assert events == []  # no area/register for an Area that is not registered
    assert coop.register(FakeArea(h.log, "ok")) == "FakeArea#1"


class NamedByProperty(FakeArea):
    """Counts the reads of its name; `broken`: reading it raises."""

    names_read = 0
    broken = False

    @property
    def name(self) -> str:
        self.names_read += 1
        if self.broken:
            raise RuntimeError("no name")
        return "named"

    @name.setter
    def name(self, value: str) -> None:
        pass


def test_register_without_an_event_sink_does_not_read_the_name() -> None:
    """Only `area/register` keeps the name (the views read it from the Area), and register()
    is on the hot path (issue 10: <= 2 us without a sink)."""
    h = Harness()
    coop = CoopContext(h.context)
    area = NamedByProperty(h.log, "ignored")
    assert coop.register(area) == "NamedByProperty#1"
    assert area.names_read == 0


def test_register_with_a_failing_name_and_a_sink_registers_nothing() -> None:
    events: list[Payload] = []
    h = Harness()
    coop = CoopContext(h.context, events.append)
    area = NamedByProperty(h.log, "ignored")
    area.broken = True
    with pytest.raises(
        AreaCallbackError, match=r"NamedByProperty#1 \(NamedByProperty\) failed in name"
    ):
        coop.register(area)
    assert (coop.areas, events) == ((), [])
    area.broken = False
    assert coop.register(area) == "NamedByProperty#1"
    register = events[0]
    assert isinstance(register, AreaRegister)
    assert (register.name, area.names_read) == ("named", 2)


def test_a_failed_collection_is_retried_without_repeating_the_callbacks_that_succeeded() -> None:
    # promote() is called once an Area is selected for GC and gc_prologue() is its final word:
    # a gc_prologue() failure of one Area rolls the collection back, and the retry neither asks
    # an Area whose resources are released to promote again nor releases them twice.
    h = Harness()
    a = h.area("a", renders=[["1"], ["3"]], promotes=["pa"])
    b = h.area("b", renders=[["2"]], promotes=["pb"])
    h.render()
    h.render()  # a [0, 2] holds b [1, 1]: one component
    h.say("x")
    before = (h.context[:], h.context.provenances)
    a.retire()
    b.retire()
    a.in_gc = ["promote", "gc_prologue"]  # back to retain inside GC: changes nothing, even later
    b.fail_in = "gc_prologue"
    h.calls()
    with pytest.raises(AreaCallbackError, match=r"FakeArea#2 \(FakeArea\) failed in gc_prologue"):
        h.coop.render()
    assert (h.context[:], h.context.provenances) == before
    assert a in h.coop
    assert b in h.coop
    b.fail_in = None
    h.render()
    calls = h.calls()
    assert calls.count(("a", "promote")) == calls.count(("b", "promote")) == 1
    assert calls.count(("a", "gc_prologue")) == 1
    assert calls.count(("b", "gc_prologue")) == 2  # it failed once: it is asked again
    assert h.texts() == ["a:pa", "b:pb", "x"]
    assert h.garbage() == ["a:1", "b:2", "a:3"]


def test_a_label_lowered_inside_gc_callbacks_does_not_lower_the_promoted_label() -> None:
    # spec: state changes inside promote()/gc_prologue() change nothing; DESIGN-NOTES: a
    # promoted message never lowers the labels of what it stands for.
    restricted = PrivatizationLabel(cls=PrivacyClass.restricted)

    class Secret(FakeArea):
        declared = restricted

        @property
        def label(self) -> PrivatizationLabel:
            return self.declared

        def gc_prologue(self) -> None:
            super().gc_prologue()
            self.declared = PrivatizationLabel(cls=PrivacyClass.public)

    events: list[Payload] = []
    h = Harness()
    coop = CoopContext(h.context, events.append)
    area = Secret(h.log, "s", promotes=["p"])
    coop.register(area)
    area.retire()  # never rendered: nothing of its own is reclaimed, only its label counts
    coop.render()
    (gc,) = [e for e in events if isinstance(e, GcCollect)]
    assert gc.label == restricted
    assert h.context.provenance(0).label == restricted
