"""Built-in Areas (notice, subtask, watch, plan), their snapshots, and the config loader."""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.context import AreaFlowState, AreaLifeState, ContextAreaImplementation, RestorableArea
from engine.context.areas import (
    BUILTIN_KINDS,
    SUBTASK_DONE_TOOL,
    AreaLoadError,
    NoticeArea,
    PlanArea,
    SubtaskArea,
    WatchArea,
    load_area,
    restorable_kinds,
)
from engine.gateway.base import NativeContent
from engine.message import Message, Role
from tests.context.fakes import Harness


def test_notice_is_one_shot_and_takes_only_itself() -> None:
    h = Harness()
    notice: ContextAreaImplementation = NoticeArea("Use the repo state.")
    h.coop.register(notice)
    h.say("before")
    assert notice.flow_state is AreaFlowState.yielded
    h.render()
    assert notice.life_state is AreaLifeState.retired
    h.say("after")
    h.render()
    assert h.texts() == ["before", "after"]
    assert h.garbage() == ["Use the repo state."]


def test_subtask_is_exclusive_until_done_then_promotes_its_result() -> None:
    h = Harness()
    h.say("main question")
    task = SubtaskArea("find the bug")
    assert task.tool_name == SUBTASK_DONE_TOOL.name == "subtask_done"
    h.coop.register(task)
    h.render()
    assert h.texts()[-1].startswith("Subtask: find the bug")
    assert task.flow_state is AreaFlowState.exclusive
    assert task.active
    h.say("model works")
    h.render()
    assert h.texts().count("model works") == 1  # renders nothing more while it works
    task.complete("it was an off-by-one")
    assert (task.life_state, task.flow_state) == (AreaLifeState.retired, AreaFlowState.yielded)
    h.say("subtask_done result")
    h.render()
    assert h.texts() == ["main question", "Subtask find the bug: it was an off-by-one"]
    with pytest.raises(RuntimeError, match="already complete"):
        task.complete("again")


def test_watch_renders_the_file_and_re_renders_only_when_it_changes(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    target.write_text("v1")
    h = Harness()
    watch = WatchArea("notes.md", tmp_path)
    h.coop.register(watch)
    h.render()
    assert "v1" in h.texts()[-1]
    h.render()
    assert len(h.texts()) == 1
    target.write_text("v2 longer")
    h.render()
    assert "v2 longer" in h.texts()[-1]
    os.utime(target, ns=(1, 1))  # touched, same bytes: no re-render
    h.render()
    assert len(h.texts()) == 2
    watch.unwatch()
    assert watch.life_state is AreaLifeState.retired
    h.render()
    assert h.texts() == []


def test_watch_missing_file_truncation_and_confinement(tmp_path: Path) -> None:
    missing = WatchArea("nope.txt", tmp_path)
    assert "(missing)" in missing.render()[0].content
    (tmp_path / "big.txt").write_text("x" * 100)
    big = WatchArea("big.txt", tmp_path, max_bytes=10)
    assert "[truncated: showing 10 of 100 bytes]" in big.render()[0].content
    with pytest.raises(ValueError, match="outside the workspace"):
        WatchArea("../escape", tmp_path)


def test_watch_reads_a_large_file_only_up_to_its_bound(tmp_path: Path) -> None:
    # observe()/render() run on the agent loop's thread: a watched file reads at most `max_bytes`
    # however large it grows, and a change past the bound that keeps what is shown re-renders
    # only when the size (in the truncation note) changes.
    target = tmp_path / "big.log"
    with target.open("wb") as handle:
        handle.write(b"head")
        handle.truncate(64 * 1024 * 1024)  # sparse: cheap on disk, 64 MiB to a reader
    watch = WatchArea("big.log", tmp_path, max_bytes=1024)
    tracemalloc.start()
    try:
        (message,) = watch.render()
        watch.observe(())
        assert watch.render() == []
        with target.open("ab") as handle:
            handle.write(b"more")
        watch.observe(())
        (again,) = watch.render()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024
    assert message.content.startswith("Watched file big.log:\n```\nhead")
    assert f"[truncated: showing 1024 of {64 * 1024 * 1024} bytes]" in message.content
    assert f"showing 1024 of {64 * 1024 * 1024 + 4} bytes" in again.content


def test_plan_checklist_re_renders_when_changed() -> None:
    h = Harness()
    plan = PlanArea("Plan", ["read", "fix"])
    h.coop.register(plan)
    h.render()
    assert h.texts()[-1] == "Plan:\n- [ ] 1. read\n- [ ] 2. fix"
    h.render()
    assert len(h.texts()) == 1
    plan.check(1)
    test_id = plan.add("test")
    plan.remove(2)
    h.render()
    assert h.texts()[-1] == "Plan:\n- [x] 1. read\n- [ ] 3. test"
    assert test_id == 3
    plan.uncheck(1)
    plan.close()
    assert plan.life_state is AreaLifeState.retired
    with pytest.raises(KeyError):
        plan.check(99)


def test_snapshot_restore_round_trips(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    task = SubtaskArea("g")
    task.render()
    plan = PlanArea("P", ["a"])
    plan.check(1)
    areas: list[RestorableArea] = [NoticeArea("n"), task, WatchArea("f", tmp_path), plan]
    for area in areas:
        assert isinstance(area, RestorableArea)
        assert BUILTIN_KINDS[area.kind] is type(area)
        restored = type(area).restore(area.snapshot())
        assert restored.snapshot() == area.snapshot()


def test_restored_watch_re_renders_only_if_the_file_changed(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("same")
    watch = WatchArea("f", tmp_path)
    watch.render()
    restored = WatchArea.restore(watch.snapshot())
    restored.observe(())
    assert restored.render() == []
    target.write_text("changed")
    restored.observe(())
    assert "changed" in restored.render()[0].content


def test_load_area_by_import_path() -> None:
    area = load_area("engine.context.areas.notice:NoticeArea", {"text": "hi"})
    assert isinstance(area, NoticeArea)
    assert isinstance(load_area("engine.context.areas.plan.PlanArea"), PlanArea)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("no.such.module:Area", "import of 'no.such.module' failed"),
        ("engine.context.areas.notice:Missing", "has no callable 'Missing'"),
        ("engine.context.areas.notice:NoticeArea", "raised TypeError"),
        ("engine.message:Source", "Source lacks life_state, flow_state, observe"),
        ("os:system", r"not a class \(builtin_function_or_method\)"),
        ("collections:OrderedDict", "lacks life_state"),
        ("nocolon", "expected 'package.module:Class'"),
    ],
)
def test_a_failing_load_names_the_path(path: str, reason: str) -> None:
    with pytest.raises(AreaLoadError, match=reason) as info:
        load_area(path)
    assert path in str(info.value)


@pytest.mark.parametrize("path", ["os:system", "subprocess:call"])
def test_a_callable_that_is_not_an_area_class_is_never_called(tmp_path: Path, path: str) -> None:
    marker = tmp_path / "marker"
    with pytest.raises(AreaLoadError, match="not a class"):
        load_area(path, {"command": f"touch {marker}", "args": ["touch", str(marker)]})
    with pytest.raises(AreaLoadError, match="not a class"):
        restorable_kinds([path])
    assert not marker.exists()


def test_an_area_class_may_declare_its_states_as_fields() -> None:
    states = {"life_state": AreaLifeState.retain, "flow_state": AreaFlowState.yielded}
    area = load_area(f"{__name__}:FieldStates", states)
    assert isinstance(area, FieldStates)
    area.observe(())
    assert [m.content for m in area.render()] == ["saw 0 items"]


@dataclass
class FieldStates:
    """An Area whose states are dataclass fields without defaults: no class attribute, still
    the protocol."""

    life_state: AreaLifeState
    flow_state: AreaFlowState
    seen: int = 0

    def observe(self, context: Sequence[NativeContent]) -> None:
        self.seen = len(context)

    def render(self) -> list[Message]:
        return [Message(Role.user, f"saw {self.seen} items")]

    def promote(self) -> tuple[Message, ...]:
        return tuple(self.render())

    def gc_prologue(self) -> None:
        self.seen = 0


def test_watch_never_follows_a_symlink_swapped_in_to_lead_outside(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("the outside secret")
    (root / "notes.txt").write_text("inside")
    area = WatchArea("notes.txt", root)
    [first] = area.render()
    assert "inside" in first.content
    (root / "notes.txt").unlink()
    (root / "notes.txt").symlink_to(outside)
    area.observe(())
    [again] = area.render()
    assert "outside the workspace" in again.content
    assert "the outside secret" not in again.content
