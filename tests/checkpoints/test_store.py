"""Checkpoints of a workspace, what changed between them, and restoring one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

import pytest

from engine.checkpoints import (
    CheckpointError,
    CheckpointsOffError,
    CheckpointStore,
    FileChange,
    Unavailable,
    UnknownCheckpointError,
    disk_usage,
    large_files,
)
from engine.config import CheckpointsConfig
from tests.checkpoints.conftest import OpenStore, run, snapshot


def by_path(changes: tuple[FileChange, ...]) -> dict[str, FileChange]:
    return {change.path: change for change in changes}


async def test_changes_between_checkpoints(workspace: Path, open_store: OpenStore) -> None:
    (workspace / "a.txt").write_text("one\ntwo\n")
    (workspace / "gone.txt").write_text("bye\n")
    store = await open_store()
    first = await store.take("start")
    (workspace / "a.txt").write_text("one\nthree\n")
    (workspace / "gone.txt").unlink()
    (workspace / "sub").mkdir()
    (workspace / "sub" / "new.txt").write_text("hello")
    second = await store.take("end")
    assert second.id != first.id
    changes = by_path(await store.changes(first.id, second.id))
    assert set(changes) == {"a.txt", "gone.txt", "sub/new.txt"}
    modified = changes["a.txt"]
    assert (modified.status, modified.added_lines, modified.removed_lines) == ("modified", 1, 1)
    assert modified.diff is not None
    assert "-two\n+three\n" in modified.diff
    assert modified.old_blob is not None
    assert modified.old_blob == _git_blob_id(b"one\ntwo\n")
    assert changes["gone.txt"].status == "deleted"
    assert changes["gone.txt"].new_blob is None
    added = changes["sub/new.txt"]
    assert added.status == "added"
    assert added.diff is not None
    assert added.diff.endswith("+hello\n\\ No newline at end of file\n")
    assert all(change.restorable for change in changes.values())


async def test_nothing_changed_returns_the_same_checkpoint(
    workspace: Path, open_store: OpenStore
) -> None:
    (workspace / "a.txt").write_text("x")
    store = await open_store()
    first = await store.take("one")
    assert (await store.take("two")).id == first.id
    reopened = await open_store()
    assert (await reopened.take("three")).id == first.id


async def test_shell_like_changes_and_restore(workspace: Path, open_store: OpenStore) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('hi')\n")
    (workspace / "run.sh").write_text("#!/bin/sh\necho\n")
    store = await open_store()
    before = await store.take("before")
    before_files = snapshot(workspace)
    run(
        [
            "sh",
            "-c",
            "mv src/main.py src/app.py && chmod +x run.sh && mkdir -p out/deep && "
            "echo built > out/deep/result.txt && rm run.sh && printf 'x' > run.sh && chmod +x run.sh",
        ],
        cwd=workspace,
    )
    after = await store.take("after")
    changes = by_path(await store.changes(before.id, after.id))
    assert changes["src/main.py"].status == "deleted"
    assert changes["src/app.py"].status == "added"
    assert changes["run.sh"].new_mode == "100755"
    assert changes["run.sh"].old_mode == "100644"
    plan = await store.plan_restore(before.id, expected=after.id)
    assert plan.conflicts == ()
    assert set(plan.deletes) == {"src/app.py", "out/deep/result.txt"}
    result = await store.restore(plan)
    assert result.failed == ()
    assert snapshot(workspace) == before_files
    assert not (workspace / "out").exists()
    # the restore was checkpointed first, so it can be undone
    undo = await store.plan_restore(plan.current, expected=before.id)
    await store.restore(undo)
    assert (workspace / "out" / "deep" / "result.txt").read_text() == "built\n"


async def test_non_utf8_name_and_binary_file(workspace: Path, open_store: OpenStore) -> None:
    store = await open_store()
    empty = await store.take("empty")
    name = os.fsdecode(b"caf\xe9.txt")
    (workspace / name).write_text("menu\n")
    (workspace / "blob.bin").write_bytes(bytes(range(256)))
    full = await store.take("full")
    changes = by_path(await store.changes(empty.id, full.id))
    assert set(changes) == {"caf\\xe9.txt", "blob.bin"}
    assert changes["caf\\xe9.txt"].added_lines == 1
    binary = changes["blob.bin"]
    assert (binary.withheld, binary.diff, binary.added_lines) == ("binary", None, None)
    (workspace / name).unlink()
    (workspace / "blob.bin").write_bytes(b"\0changed")
    plan = await store.plan_restore(full.id, expected=(await store.take("edit")).id)
    await store.restore(plan)
    assert (workspace / name).read_text() == "menu\n"
    assert (workspace / "blob.bin").read_bytes() == bytes(range(256))


async def test_secret_files_get_ids_only(workspace: Path, open_store: OpenStore) -> None:
    store = await open_store()
    empty = await store.take("empty")
    (workspace / ".env").write_text("KEY=hunter2\n")
    changes = await store.changes(empty.id)
    (secret,) = changes
    assert (secret.withheld, secret.diff, secret.added_lines) == ("secret", None, None)
    assert secret.new_blob == _git_blob_id(b"KEY=hunter2\n")


async def test_files_over_the_cap_are_recorded_not_kept(
    workspace: Path, open_store: OpenStore
) -> None:
    store = await open_store(max_file_bytes=100)
    (workspace / "small.txt").write_text("s")
    first = await store.take("first")
    big = b"x" * 500
    (workspace / "big [1] *.bin").write_bytes(big)
    second = await store.take("second")
    assert [(f.path, f.size, f.blob) for f in second.skipped] == [
        ("big [1] *.bin", 500, _git_blob_id(big))
    ]
    assert (await store.take("again")).id == second.id
    (change,) = await store.changes(first.id, second.id)
    assert (change.path, change.status, change.restorable) == ("big [1] *.bin", "added", False)
    assert change.new_blob == _git_blob_id(big)
    # a restore lists it and leaves it alone: it could never be brought back
    plan = await store.plan_restore(first.id, expected=second.id)
    assert [note.path for note in plan.not_restorable] == ["big [1] *.bin"]
    assert plan.deletes == ()
    # a reopened store still knows it was over the cap
    reopened = await open_store(max_file_bytes=100)
    assert (await reopened.take("reopened")).id == second.id
    (workspace / "big [1] *.bin").write_bytes(b"y")
    third = await reopened.take("shrunk")
    (change,) = await reopened.changes(second.id, third.id)
    assert (change.status, change.restorable, change.new_blob) == (
        "modified",
        False,
        _git_blob_id(b"y"),
    )


async def test_conflicting_external_edit(workspace: Path, open_store: OpenStore) -> None:
    (workspace / "a.txt").write_text("original\n")
    store = await open_store()
    start = await store.take("start")
    (workspace / "a.txt").write_text("agent\n")
    (workspace / "b.txt").write_text("agent made\n")
    agent_left = await store.take("turn end")
    (workspace / "a.txt").write_text("user edit\n")
    plan = await store.plan_restore(start.id, expected=agent_left.id)
    assert plan.conflicts == ("a.txt",)
    result = await store.restore(plan)
    assert result.kept_conflicts == ("a.txt",)
    assert result.deleted == ("b.txt",)
    assert (workspace / "a.txt").read_text() == "user edit\n"
    plan = await store.plan_restore(start.id, expected=agent_left.id)
    result = await store.restore(plan, overwrite=True)
    assert result.written == ("a.txt",)
    assert (workspace / "a.txt").read_text() == "original\n"


async def test_an_edit_after_planning_is_a_conflict(workspace: Path, open_store: OpenStore) -> None:
    (workspace / "a.txt").write_text("original\n")
    store = await open_store()
    start = await store.take("start")
    (workspace / "a.txt").write_text("agent\n")
    agent_left = await store.take("turn end")
    plan = await store.plan_restore(start.id, expected=agent_left.id)
    assert plan.conflicts == ()
    (workspace / "a.txt").write_text("typed while the dialog was open\n")
    result = await store.restore(plan)
    assert result.kept_conflicts == ("a.txt",)
    assert (workspace / "a.txt").read_text() == "typed while the dialog was open\n"


async def test_checkpoints_survive_a_new_process(
    workspace: Path, data_dir: Path, open_store: OpenStore
) -> None:
    (workspace / "a.txt").write_text("one\n")
    store = await open_store()
    first = await store.take("first")
    (workspace / "a.txt").write_text("two\n")
    second = await store.take("second")
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from engine.checkpoints import CheckpointStore\n"
        "from engine.config import CheckpointsConfig\n"
        "async def main():\n"
        "    store = await CheckpointStore.open(Path(sys.argv[1]), Path(sys.argv[2]),"
        " CheckpointsConfig(), 's1')\n"
        "    plan = await store.plan_restore(sys.argv[3], expected=sys.argv[4])\n"
        "    print((await store.restore(plan)).written)\n"
        "asyncio.run(main())\n"
    )
    out = run([sys.executable, "-c", script, str(workspace), str(data_dir), first.id, second.id])
    assert out.strip() == "('a.txt',)"
    assert (workspace / "a.txt").read_text() == "one\n"


async def test_two_sessions_in_one_workspace(workspace: Path, open_store: OpenStore) -> None:
    (workspace / "shared.txt").write_text("base\n")
    one = await open_store("one")
    two = await open_store("two")
    one_start = await one.take("start")
    (workspace / "shared.txt").write_text("one wrote\n")
    two_start = await two.take("start")
    assert two_start.id != one_start.id
    (workspace / "shared.txt").write_text("both\n")
    one_end = await one.take("end")
    two_end = await two.take("end")
    assert [c.path for c in await one.changes(one_start.id, one_end.id)] == ["shared.txt"]
    assert [c.path for c in await two.changes(two_start.id, two_end.id)] == ["shared.txt"]
    indexes = sorted(p.name for p in one.shadow_dir.glob("index-*"))
    assert indexes == ["index-one", "index-two"]


async def test_prune_drops_a_session(workspace: Path, open_store: OpenStore) -> None:
    keep = await open_store("keep")
    drop = await open_store("drop")
    (workspace / "a.txt").write_text("kept\n")
    kept = await keep.take("kept")
    (workspace / "big.txt").write_text("dropped " * 1000)
    dropped = await drop.take("dropped")
    await keep.prune("drop")
    shadow = keep.shadow_dir
    assert not (shadow / "index-drop").exists()
    refs = run(["git", f"--git-dir={shadow}", "for-each-ref", "--format=%(refname)"]).split()
    assert refs == ["refs/trellis/keep/1"]
    with pytest.raises(AssertionError, match="cat-file"):
        run(["git", f"--git-dir={shadow}", "cat-file", "-e", dropped.id])
    assert (await keep.take("after prune")).id != kept.id  # big.txt is still there


async def test_off_for_home_root_and_too_many_files(workspace: Path, data_dir: Path) -> None:
    settings = CheckpointsConfig()
    home = await CheckpointStore.open(Path.home(), data_dir, settings, "s")
    assert isinstance(home, Unavailable)
    assert "home folder" in home.reason
    root = await CheckpointStore.open(Path("/"), data_dir, settings, "s")
    assert isinstance(root, Unavailable)
    for number in range(6):
        (workspace / f"f{number}.txt").write_text("x")
    crowded = await CheckpointStore.open(workspace, data_dir, CheckpointsConfig(max_files=5), "s")
    assert isinstance(crowded, Unavailable)
    assert "6 files" in crowded.reason
    off = await CheckpointStore.open(workspace, data_dir, CheckpointsConfig(enabled=False), "s")
    assert isinstance(off, Unavailable)


def _git_blob_id(data: bytes) -> str:
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


async def test_an_unknown_checkpoint_id_is_a_clear_error(
    workspace: Path, open_store: OpenStore
) -> None:
    (workspace / "a.txt").write_text("x")
    store = await open_store()
    real = await store.take("real")
    blob = _git_blob_id(b"x")
    for wrong in ("HEAD", "0" * 40, blob, "--all"):
        with pytest.raises(UnknownCheckpointError, match="no checkpoint"):
            await store.changes(wrong, real.id)
        with pytest.raises(UnknownCheckpointError):
            await store.plan_restore(real.id, expected=wrong)


async def test_a_folder_holding_files_where_a_file_goes_is_refused(
    workspace: Path, open_store: OpenStore
) -> None:
    (workspace / "build").write_text("a file once\n")
    store = await open_store(exclude=["*.o"])
    start = await store.take("start")
    (workspace / "build").unlink()
    (workspace / "build").mkdir()
    (workspace / "build" / "main.o").write_bytes(b"ignored object")
    end = await store.take("end")
    plan = await store.plan_restore(start.id, expected=end.id)
    assert "*.o" in plan.ignore_rules
    result = await store.restore(plan)
    assert [note.path for note in result.failed] == ["build"]
    assert "holds files" in result.failed[0].reason
    assert (workspace / "build" / "main.o").read_bytes() == b"ignored object"


async def test_off_once_the_workspace_grows_past_a_limit(
    workspace: Path, open_store: OpenStore
) -> None:
    store = await open_store(max_files=3)
    for round_ in range(5):
        # files made and removed between checkpoints do not add up
        (workspace / f"tmp{round_}.txt").write_text("x")
        await store.take("made")
        (workspace / f"tmp{round_}.txt").unlink()
        await store.take("removed")
    for number in range(4):
        (workspace / f"f{number}.txt").write_text("x")
    with pytest.raises(CheckpointsOffError, match="4 files"):
        await store.take("too many")
    with pytest.raises(CheckpointsOffError):
        await store.take("still off")


async def test_a_data_directory_inside_the_workspace_is_left_out(workspace: Path) -> None:
    (workspace / "a.txt").write_text("x")
    store = await CheckpointStore.open(workspace, workspace / "data", CheckpointsConfig(), "s")
    assert not isinstance(store, Unavailable)
    first = await store.take("first")
    second = await store.take("second")
    assert second.id == first.id
    files = run(["git", f"--git-dir={store.shadow_dir}", "ls-tree", "-r", "--name-only", first.id])
    assert files.split() == ["a.txt"]
    await store.aclose()


@pytest.mark.parametrize("after", [0.0, 0.005, 0.02, 0.05, 0.1])
async def test_a_cancelled_checkpoint_leaves_the_store_usable(
    workspace: Path, open_store: OpenStore, after: float
) -> None:
    for number in range(300):
        (workspace / f"f{number}.txt").write_text(f"{number}\n")
    store = await open_store()
    task = asyncio.create_task(store.take("cancelled"))
    await asyncio.sleep(after)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    checkpoint = await store.take("after")
    files = run(
        ["git", f"--git-dir={store.shadow_dir}", "ls-tree", "-r", "--name-only", checkpoint.id]
    )
    assert len(files.split()) == 300
    assert list(store.shadow_dir.glob("index-*.lock")) == []


async def test_an_unchanged_large_file_is_hashed_once(
    workspace: Path, open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed: list[Path] = []
    real = large_files.blob_id

    def counted(path: Path, size: int) -> str:
        hashed.append(path)
        return real(path, size)

    monkeypatch.setattr(large_files, "blob_id", counted)
    store = await open_store(max_file_bytes=10)
    (workspace / "big [1] *.bin").write_bytes(b"x" * 100)
    (workspace / "small.txt").write_text("s")
    first = await store.take("first")
    (workspace / "small.txt").write_text("changed")
    await store.take("second")
    assert (await store.take("third")).skipped == first.skipped
    assert [p.name for p in hashed] == ["big [1] *.bin"]


async def test_off_past_max_bytes_and_disk_usage(
    workspace: Path, data_dir: Path, open_store: OpenStore
) -> None:
    (workspace / "a.txt").write_text("x" * 100)
    heavy = await CheckpointStore.open(workspace, data_dir, CheckpointsConfig(max_bytes=50), "s")
    assert isinstance(heavy, Unavailable)
    assert "100 bytes" in heavy.reason
    assert "max_bytes" in heavy.reason
    store = await open_store()
    await store.take("one")
    (usage,) = disk_usage(data_dir)
    assert usage.workspace == str(workspace)
    assert usage.shadow_dir == store.shadow_dir
    assert usage.bytes > 100
    assert disk_usage(data_dir / "none") == ()


async def test_a_restored_file_keeps_its_permissions_but_the_exec_bit(
    workspace: Path, open_store: OpenStore
) -> None:
    private = workspace / "private.sh"
    private.write_text("v1\n")
    private.chmod(0o700)
    store = await open_store()
    start = await store.take("start")
    private.write_text("v2\n")
    private.chmod(0o600)
    end = await store.take("end")
    await store.restore(await store.plan_restore(start.id, expected=end.id))
    assert private.read_text() == "v1\n"
    assert private.stat().st_mode & 0o777 == 0o700


async def test_a_lock_left_by_a_dead_process_is_dropped_on_open(
    workspace: Path, open_store: OpenStore
) -> None:
    (workspace / "a.txt").write_text("x")
    # the index is the status path's: a journal's checkpoint never needs it
    store = await open_store(journal=False)
    await store.take("first")
    lock = store.shadow_dir / "index-s1.lock"
    lock.write_bytes(b"")
    (workspace / "a.txt").write_text("y")
    with pytest.raises(CheckpointError, match=r"index-s1\.lock"):
        await store.take("blocked")
    os.utime(lock, (0, 0))
    reopened = await open_store(journal=False)
    assert not lock.exists()
    await reopened.take("after")
