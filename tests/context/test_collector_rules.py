"""The Collector and GC rules of docs/spec/context-areas.md, one test per rule."""

from __future__ import annotations

from engine.context import AreaFlowState, EffectRange
from engine.context.collector import tail_component
from tests.context.fakes import Harness

EXCLUSIVE = AreaFlowState.exclusive


def test_one_shot_area_collected_on_next_call() -> None:
    h = Harness()
    notice = h.area("notice", renders=[["hi"]])
    notice.retire_after_render = True
    assert h.render() == ["notice:hi"]
    assert h.coop.ranges[h.coop.area_id(notice)] == EffectRange(0, 0)
    # spec: collection happens at the beginning of a later render()
    assert h.render() == []
    assert h.garbage() == ["notice:hi"]
    assert notice not in h.coop
    assert h.calls() == [
        ("notice", "render"),
        ("notice", "promote"),
        ("notice", "gc_prologue"),
    ]


def test_counter_publishing_1_to_10_then_collected_whole() -> None:
    h = Harness()
    counter = h.area("counter", renders=[[str(i)] for i in range(1, 11)])
    for i in range(1, 11):
        h.render()
        h.say(f"reply {i}")
    assert h.coop.ranges[h.coop.area_id(counter)] == EffectRange(0, 18)
    counter.retire()
    h.render()
    assert h.garbage() == [f"counter:{i}" for i in range(1, 11)]
    # the conversation between its renders is carried over, in order
    assert h.texts() == [f"reply {i}" for i in range(1, 11)]


def test_area_retiring_inside_observe_is_not_rendered_and_collected_one_call_later() -> None:
    h = Harness()
    area = h.area("a", renders=[["x"], ["y"]])
    h.render()
    area.retire_in_observe = True
    h.calls()
    assert h.render() == ["a:x"]  # observed, retired, not rendered: nothing collected yet
    assert h.calls() == [("a", "observe")]
    assert h.render() == []
    assert h.calls() == [("a", "promote"), ("a", "gc_prologue")]
    assert h.garbage() == ["a:x"]


def test_transitive_overlap_retained_area_blocks_three_retired_ones() -> None:
    h = Harness()
    outer = h.area("outer", every=["o"])  # re-renders every pass: its range spans the others
    a = h.area("a", renders=[["1"]])
    b = h.area("b", renders=[["2"]])
    c = h.area("c", renders=[["3"]])
    h.render()  # outer [0,0], a [1,1], b [2,2], c [3,3]
    h.render()  # outer [0,4]: overlaps all three
    for area in (a, b, c):
        area.retire()
    outer.every = []
    h.calls()
    h.render()
    assert h.coop.garbage == ()
    assert ("a", "promote") not in h.calls()  # a retained Area blocks the whole component
    outer.retire()
    h.render()
    # once it retires the plan covers all four from index 0
    assert h.calls()[:4] == [
        ("outer", "promote"),
        ("a", "promote"),
        ("b", "promote"),
        ("c", "promote"),
    ]
    assert h.garbage() == ["outer:o", "a:1", "b:2", "c:3", "outer:o"]
    assert h.texts() == []


def test_older_retired_component_stays_while_retained_component_lies_after_it() -> None:
    h = Harness()
    old = h.area("old", renders=[["1"]])
    new = h.area("new", renders=[["2"], ["3"]])
    h.render()  # old [0,0], new [1,1]
    old.retire()
    h.render()  # the tail component is new's, retained: old stays
    h.render()
    assert old in h.coop
    assert h.coop.garbage == ()
    new.retire()
    h.render()  # new's component is the tail one now: collected; old is next
    assert new not in h.coop
    assert old in h.coop
    h.render()
    assert old not in h.coop
    assert h.garbage() == ["new:2", "new:3", "old:1"]


def test_touching_ranges_count_as_overlap() -> None:
    ranges = [("c", EffectRange(5, 7)), ("b", EffectRange(3, 5)), ("a", EffectRange(0, 2))]
    component = tail_component(iter(ranges), lambda _: True)
    assert component is not None
    assert component.areas == ("c", "b")  # [3,5] touches [5,7]; [0,2] ends before 3
    assert component.earliest == 3


def test_collector_walk_stops_at_first_disjoint_range() -> None:
    seen: list[str] = []

    def retired(name: str) -> bool:
        seen.append(name)
        return True

    ranges = [("z", EffectRange(8, 9)), ("y", EffectRange(4, 8)), ("x", EffectRange(0, 1))]
    component = tail_component(iter(ranges), retired)
    assert component is not None
    assert component.reclaimable
    assert seen == ["z", "y"]


def test_retained_nested_area_blocks_its_retired_container() -> None:
    component = tail_component(
        iter([("inner", EffectRange(2, 3)), ("outer", EffectRange(0, 2))]),
        lambda name: name == "outer",
    )
    assert component is not None
    assert not component.reclaimable


def test_promote_runs_before_any_prologue_across_nested_areas() -> None:
    h = Harness()
    outer = h.area("outer", renders=[["o1"], ["o2"]], promotes=["kept"])
    inner = h.area("inner", renders=[["i"]], promotes=["kept too"])
    h.render()
    h.render()  # outer [0,2] contains inner [1,1]
    outer.retire()
    inner.retire()
    h.calls()
    h.render()
    assert h.calls() == [
        ("outer", "promote"),
        ("inner", "promote"),
        ("outer", "gc_prologue"),
        ("inner", "gc_prologue"),
    ]
    assert h.texts() == ["outer:kept", "inner:kept too"]


def test_state_changes_inside_promote_and_prologue_change_nothing() -> None:
    h = Harness()
    area = h.area("a", renders=[["x"]])
    h.render()
    area.retire()
    area.in_gc = ["promote", "gc_prologue"]
    h.render()
    assert area not in h.coop
    assert h.garbage() == ["a:x"]


def test_area_retiring_without_rendering_is_removed_at_next_collection() -> None:
    h = Harness()
    h.say("hello")
    idle = h.area("idle", promotes=["note"])
    idle.retire()
    h.render()
    assert idle not in h.coop
    assert h.calls() == [("idle", "promote"), ("idle", "gc_prologue")]
    assert h.texts() == ["hello", "idle:note"]  # nothing detached, the promotion appended
    assert h.coop.garbage == ()


def test_conversation_after_yielded_notice_survives_its_collection_in_order() -> None:
    h = Harness()
    h.say("before")
    notice = h.area("notice", renders=[["n"]])
    notice.retire_after_render = True
    h.render()
    h.say("q")
    h.say("a")
    h.render()
    assert h.texts() == ["before", "q", "a"]
    assert h.garbage() == ["notice:n"]


def test_replies_appended_during_exclusive_operation_are_reclaimed_with_it() -> None:
    h = Harness()
    h.say("before")
    task = h.area("task", flow=EXCLUSIVE, renders=[["goal"]], promotes=["result"])
    h.render()
    h.say("step 1")
    h.render()  # still exclusive: returns on it again
    h.say("step 2")
    task.flow = AreaFlowState.yielded
    task.retire()
    h.render()
    assert h.garbage() == ["task:goal", "step 1", "step 2"]
    assert h.texts() == ["before", "task:result"]


def test_a_promoted_message_survives_every_later_collection() -> None:
    h = Harness()
    first = h.area("first", renders=[["1"]], promotes=["P"])
    h.render()
    first.retire()
    later = h.area("later", renders=[["2"]])
    h.render()  # collects first; P appended, then later renders
    assert h.texts() == ["first:P", "later:2"]
    for i in range(3):
        wrap = h.area(f"wrap{i}", flow=EXCLUSIVE, renders=[["w"]])
        h.render()
        h.say(f"chatter {i}")
        wrap.retire()
        h.render()
    later.retire()
    h.render()
    assert "first:P" in h.texts()
    assert h.texts().count("first:P") == 1


def test_cursor_on_collected_area_moves_to_next_surviving_one() -> None:
    h = Harness()
    a = h.area("a", flow=EXCLUSIVE, renders=[["a"]])
    b = h.area("b")
    c = h.area("c")
    h.render()
    assert h.coop.cursor is a
    a.retire()
    b.retire()
    h.render()  # a's component collected; b retired without rendering: both removed
    assert h.coop.cursor is c


def test_collection_with_no_cursor() -> None:
    h = Harness()
    a = h.area("a", promotes=["p"])
    a.retire()
    assert h.coop.cursor is None
    h.render()
    assert h.coop.cursor is None
    assert h.texts() == ["a:p"]
