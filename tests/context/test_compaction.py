"""Compaction through the collection mechanism: the plan, the Context edit and the rebuild."""

from __future__ import annotations

import pytest

from engine.context import EffectRange, ItemKind, Provenance, rebuild_context
from engine.context.compaction import CompactionPlan, group_starts, plan_compaction
from engine.context.log_items import summary_message, summary_provenance
from engine.events import CompactEnd, CompactStart, CompactSummary
from engine.message import USER, Source
from tests.context.fakes import Harness, LoggedLoop


def prov(turn: int | None, kind: ItemKind = ItemKind.message) -> Provenance:
    return Provenance(kind=kind, turn=turn, source=USER)


def test_groups_are_turns_and_between_turn_items_join_the_next_turn() -> None:
    provenances = [prov(1), prov(1), prov(None), prov(2), prov(2), prov(None), prov(3)]
    assert group_starts(provenances) == [0, 2, 5]


def test_plan_keeps_the_newest_groups_and_trailing_context() -> None:
    provenances = [prov(1), prov(1), prov(2), prov(2), prov(3), prov(None)]
    plan = plan_compaction(provenances, keep_groups=1, barrier=len(provenances))
    assert plan is not None
    assert (plan.earliest, plan.cut, plan.groups) == (0, 4, 2)
    assert plan.reclaimed == (0, 1, 2, 3)
    assert plan.carried == (4, 5)
    assert plan.shift == -3


def test_plan_stops_at_the_earliest_effect_range() -> None:
    provenances = [prov(1), prov(2), prov(3), prov(4)]
    plan = plan_compaction(provenances, keep_groups=0, barrier=2)
    assert plan is not None
    assert plan.reclaimed == (0, 1)
    assert plan_compaction(provenances, keep_groups=0, barrier=0) is None


def test_promoted_items_are_carried_never_summarized() -> None:
    provenances = [prov(1), prov(1, ItemKind.promoted), prov(2), prov(3)]
    plan = plan_compaction(provenances, keep_groups=1, barrier=4)
    assert plan is not None
    assert plan.reclaimed == (0, 2)
    assert plan.carried == (1, 3)


def test_nothing_to_compact() -> None:
    assert plan_compaction([prov(1)], keep_groups=1, barrier=1) is None
    assert plan_compaction([], keep_groups=0, barrier=0) is None
    with pytest.raises(ValueError, match="keep_groups"):
        plan_compaction([prov(1)], keep_groups=-1, barrier=1)


def test_coop_compaction_shifts_ranges_and_refuses_to_cut_one() -> None:
    harness = Harness()
    for text in ("a", "b", "c"):
        harness.context.emplace_message(
            summary_message(CompactSummary(content=text)), prov(len(harness.context) + 1)
        )
    area = harness.area("n", renders=[["x"]])
    harness.render()
    assert harness.coop.ranges[harness.coop.area_id(area)] == EffectRange(3, 3)
    provenances = harness.context.provenances
    plan = plan_compaction(provenances, keep_groups=0, barrier=3)
    assert plan is not None
    summary = CompactSummary(content="S")
    harness.coop.compact(plan, summary_message(summary), summary_provenance(None, summary))
    assert harness.texts() == ["S", "n:x"]
    assert harness.coop.ranges[harness.coop.area_id(area)] == EffectRange(1, 1)
    assert harness.garbage() == ["a", "b", "c"]
    beyond = CompactionPlan(earliest=0, cut=2, groups=1, reclaimed=(0, 1), carried=())
    with pytest.raises(ValueError, match="effect range"):
        harness.coop.compact(beyond, summary_message(summary), summary_provenance(None, summary))


def test_rebuild_replays_a_compaction_item_for_item() -> None:
    loop = LoggedLoop()
    for number in range(3):
        loop.open_turn()
        loop.user(f"q{number}")
        loop.assistant(f"a{number}")
        loop.close_turn()
    plan = plan_compaction(loop.context.provenances, keep_groups=1, barrier=len(loop.context))
    assert plan is not None
    loop.session.append(CompactStart(groups=plan.groups, earliest=plan.earliest))
    summary = CompactSummary(content="Summary: q0 a0 q1 a1")
    event = loop.session.append(summary)
    loop.session.append(
        CompactEnd(earliest=plan.earliest, reclaimed=plan.reclaimed, carried=plan.carried)
    )
    loop.coop.compact(plan, summary_message(summary), summary_provenance(event.seq, summary))
    rebuilt = rebuild_context(loop.context.gateway_type, loop.session.held)
    assert rebuilt.context.entries() == loop.context.entries()
    assert [m.content for m in rebuilt.context.messages()] == ["Summary: q0 a0 q1 a1", "q2", "a2"]
    assert rebuilt.context.provenance(0).source == Source("compaction")
    assert rebuilt.context.provenance(0).kind is ItemKind.summary
