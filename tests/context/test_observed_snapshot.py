"""observe() is handed a snapshot of the Area's range that a pass keeps while the range and the
Context's items before the tail stay as they were; each test changes one of them and checks the
Area then sees what the Context holds."""

from __future__ import annotations

import pytest

from engine.context import AreaCallbackError, AreaFlowState, EffectRange
from engine.context.compaction import plan_compaction
from engine.context.log_items import summary_message, summary_provenance
from engine.context.provenance import ItemKind, Provenance
from engine.events import CompactSummary
from engine.message import USER
from tests.context.fakes import FakeArea, Harness


def range_of(h: Harness, area: FakeArea) -> EffectRange:
    return h.coop.ranges[h.coop.area_id(area)]


def what_it_holds(h: Harness, area: FakeArea) -> tuple[object, ...]:
    effect = range_of(h, area)
    return h.context[effect.earliest : effect.latest + 1]


def test_an_unchanged_range_is_observed_as_the_same_snapshot_without_a_copy() -> None:
    h = Harness()
    a = h.area("a", renders=[["1", "2"]])
    for _ in range(3):
        h.render()
        h.say("later")
    assert len(a.observed) == 2
    assert a.observed[0] == what_it_holds(h, a)
    assert a.observed[1] is a.observed[0]


def test_a_range_that_moved_is_observed_anew() -> None:
    h = Harness()
    a = h.area("a", renders=[["1"], [], ["2"]])
    h.render()
    h.say("between")
    h.render()  # observes [1]; renders nothing
    h.render()  # observes [1]; renders "2": the range now ends there
    h.render()
    assert range_of(h, a) == EffectRange(0, 2)
    assert [len(seen) for seen in a.observed] == [1, 1, 3]
    assert a.observed[-1] == what_it_holds(h, a)


def test_after_a_model_change_the_area_observes_the_rebound_items() -> None:
    h = Harness()
    a = h.area("a", renders=[["1", "2"]])
    h.render()
    h.render()
    entries = [(dict(item, content=f"{item['content']}'"), p) for item, p in h.context.entries()]
    h.context.rebind(h.context.gateway_type, entries)
    h.render()
    assert [item["content"] for item in a.observed[-1]] == ["a:1'", "a:2'"]
    assert all(x is y for x, y in zip(a.observed[-1], what_it_holds(h, a), strict=True))


def test_after_a_compaction_the_area_observes_its_shifted_range() -> None:
    h = Harness()
    for text in ("a", "b", "c"):
        h.context.emplace_message(
            summary_message(CompactSummary(content=text)),
            Provenance(kind=ItemKind.message, turn=len(h.context) + 1, source=USER),
        )
    area = h.area("n", renders=[["x"]])
    h.render()
    h.render()
    plan = plan_compaction(h.context.provenances, keep_groups=0, barrier=3)
    assert plan is not None
    summary = CompactSummary(content="S")
    h.coop.compact(plan, summary_message(summary), summary_provenance(None, summary))
    h.render()
    assert range_of(h, area) == EffectRange(1, 1)
    assert area.observed[-1] == what_it_holds(h, area)
    assert [h.context.codec.decode(item).content for item in area.observed[-1]] == ["n:x"]


def test_after_a_collection_cut_the_tail_a_survivor_observes_what_the_context_holds() -> None:
    h = Harness()
    keeper = h.area("keeper", renders=[["k"]])
    h.render()
    h.say("between")
    done = h.area("done", renders=[["d"]], promotes=["kept"])
    h.render()
    h.say("after")
    done.retire()
    h.render()  # collects "done": its item goes, "after" is carried, "kept" is promoted
    assert h.garbage() == ["done:d"]
    h.render()
    assert keeper.observed[-1] == what_it_holds(h, keeper)
    assert [h.context.codec.decode(item).content for item in keeper.observed[-1]] == ["keeper:k"]


def test_after_a_failed_render_was_rolled_back_an_area_observes_its_own_items() -> None:
    h = Harness()
    a = h.area("a", renders=[["1"]])
    b = h.area("b", every=["x"], flow=AreaFlowState.yielded)
    h.render()
    b.fail_in = "render"
    with pytest.raises(AreaCallbackError, match="render failed"):
        h.render()
    b.fail_in = None
    h.render()
    assert a.observed[-1] == what_it_holds(h, a)
    assert [h.context.codec.decode(item).content for item in a.observed[-1]] == ["a:1"]
