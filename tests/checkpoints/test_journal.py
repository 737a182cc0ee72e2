"""The change journal: checkpoints from inotify's changed paths, and each doubt that sends a
checkpoint to the status path instead; the long-lived git processes, dead or closed."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.checkpoints import CheckpointError, CheckpointStore, FileChange
from engine.checkpoints import journal as journal_module
from engine.checkpoints.inotify import IN_Q_OVERFLOW, Event, Inotify, WatchLimitError, available
from engine.checkpoints.shadow_repo import ShadowRepo
from tests.checkpoints.conftest import OpenStore, run

pytestmark = pytest.mark.skipif(not available(), reason="inotify is Linux's")
journal_only = pytest.mark.parametrize("open_store", ["journal"], indirect=True)
"""These tests open their stores with the journal: once is enough."""


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git commands started one per call (`ShadowRepo.run`): the status path's."""
    started: list[str] = []
    run = ShadowRepo.run

    async def counted(self: ShadowRepo, *args: str, **options: Any) -> bytes:
        started.append(next(arg for arg in args if not arg.startswith("-") and "=" not in arg))
        return await run(self, *args, **options)

    monkeypatch.setattr(ShadowRepo, "run", counted)
    return started


async def journal_store(open_store: OpenStore, **settings: object) -> CheckpointStore:
    store = await open_store(journal=True, **settings)
    await store.take("cold")  # by status, which starts the journal
    return store


def shell(workspace: Path, command: str) -> None:
    subprocess.run(["sh", "-c", command], cwd=workspace, check=True)


def paths(changes: tuple[FileChange, ...]) -> dict[str, str]:
    return {change.path: change.status for change in changes}


@journal_only
async def test_nothing_changed_spawns_nothing(
    workspace: Path, open_store: OpenStore, spawned: list[str]
) -> None:
    (workspace / "a.txt").write_text("x")
    store = await journal_store(open_store)
    spawned.clear()
    first = await store.take("one")
    assert (await store.take("two")).id == first.id
    (workspace / "a.txt").write_text("y")
    changed = await store.take("three")
    assert paths(await store.changes(first.id, changed.id)) == {"a.txt": "modified"}
    assert spawned == []


@journal_only
async def test_a_new_nested_folder_made_by_a_command(
    workspace: Path, open_store: OpenStore, spawned: list[str]
) -> None:
    store = await journal_store(open_store)
    before = await store.take("before")
    spawned.clear()
    shell(workspace, "mkdir -p a/b/c && echo x > a/b/c/f && echo y > a/g && mkdir a/empty")
    after = await store.take("after")
    assert paths(await store.changes(before.id, after.id)) == {
        "a/b/c/f": "added",
        "a/g": "added",
    }
    # the new folders are watched: a change deep inside is seen
    shell(workspace, "echo z >> a/b/c/f && echo w > a/empty/new")
    later = await store.take("later")
    assert paths(await store.changes(after.id, later.id)) == {
        "a/b/c/f": "modified",
        "a/empty/new": "added",
    }
    assert spawned == []


@journal_only
async def test_a_file_in_an_ignored_folder_is_left_out(
    workspace: Path, open_store: OpenStore, spawned: list[str]
) -> None:
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    store = await journal_store(open_store)
    before = await store.take("before")
    spawned.clear()
    shell(
        workspace,
        "mkdir -p build/deep node_modules/x && echo o > build/deep/x.o && echo j > "
        "node_modules/x/i.js && echo l > run.log && echo t > top.txt",
    )
    after = await store.take("after")
    assert paths(await store.changes(before.id, after.id)) == {"top.txt": "added"}
    assert spawned == []


@journal_only
async def test_a_gitignore_change_takes_the_status_path(
    workspace: Path, open_store: OpenStore, spawned: list[str]
) -> None:
    (workspace / "keep.txt").write_text("k")
    store = await journal_store(open_store)
    before = await store.take("before")
    spawned.clear()
    (workspace / ".gitignore").write_text("*.tmp\n")
    (workspace / "scratch.tmp").write_text("s")
    after = await store.take("after")
    assert "status" in spawned
    assert paths(await store.changes(before.id, after.id)) == {".gitignore": "added"}
    # and the journal is back, with the new rules
    spawned.clear()
    (workspace / "more.tmp").write_text("m")
    (workspace / "keep.txt").write_text("k2")
    later = await store.take("later")
    assert spawned == []
    assert paths(await store.changes(after.id, later.id)) == {"keep.txt": "modified"}


@journal_only
async def test_a_symlink_takes_the_status_path(
    workspace: Path, open_store: OpenStore, spawned: list[str]
) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "f").write_text("f")
    store = await journal_store(open_store)
    before = await store.take("before")
    spawned.clear()
    (workspace / "link").symlink_to("d")
    after = await store.take("after")
    assert "status" in spawned
    change = (await store.changes(before.id, after.id))[0]
    assert (change.path, change.status, change.new_mode) == ("link", "added", "120000")


@journal_only
async def test_a_path_beyond_a_symlinked_folder_takes_the_status_path(
    workspace: Path, open_store: OpenStore, spawned: list[str], tmp_path: Path
) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "f").write_text("f")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("elsewhere")
    store = await journal_store(open_store)
    before = await store.take("before")
    spawned.clear()
    shell(workspace, f"rm -rf d && ln -s {outside} d")
    after = await store.take("after")
    assert "status" in spawned
    found = {c.path: (c.status, c.new_mode) for c in await store.changes(before.id, after.id)}
    assert found == {"d/f": ("deleted", None), "d": ("added", "120000")}


@journal_only
async def test_a_deleted_folder(workspace: Path, open_store: OpenStore, spawned: list[str]) -> None:
    shell(workspace, "mkdir -p d/e && echo 1 > d/one && echo 2 > d/e/two && echo 3 > three")
    store = await journal_store(open_store)
    before = await store.take("before")
    spawned.clear()
    shell(workspace, "rm -rf d")
    after = await store.take("after")
    assert paths(await store.changes(before.id, after.id)) == {
        "d/one": "deleted",
        "d/e/two": "deleted",
    }
    # a folder of the same name again is watched again
    shell(workspace, "mkdir d && echo again > d/one")
    again = await store.take("again")
    assert paths(await store.changes(after.id, again.id)) == {"d/one": "added"}
    assert spawned == []


@journal_only
async def test_a_renamed_folder(workspace: Path, open_store: OpenStore, spawned: list[str]) -> None:
    shell(workspace, "mkdir -p d/e && echo 1 > d/one && echo 2 > d/e/two")
    store = await journal_store(open_store)
    before = await store.take("before")
    spawned.clear()
    shell(workspace, "mv d moved && mkdir d && echo new > d/new")
    after = await store.take("after")
    assert paths(await store.changes(before.id, after.id)) == {
        "d/one": "deleted",
        "d/e/two": "deleted",
        "d/new": "added",
        "moved/one": "added",
        "moved/e/two": "added",
    }
    # the moved folder's watches follow it under its new name
    shell(workspace, "echo 22 >> moved/e/two && echo n2 >> d/new")
    later = await store.take("later")
    assert paths(await store.changes(after.id, later.id)) == {
        "moved/e/two": "modified",
        "d/new": "modified",
    }
    # and a folder moved out of the workspace is no longer watched
    shell(workspace, "mv moved ../away && mkdir -p ../away/e && echo x > ../away/e/later")
    gone = await store.take("gone")
    assert paths(await store.changes(later.id, gone.id)) == {
        "moved/one": "deleted",
        "moved/e/two": "deleted",
    }
    assert spawned == []


@journal_only
async def test_lost_events_take_the_status_path(
    workspace: Path, open_store: OpenStore, spawned: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "a.txt").write_text("x")
    store = await journal_store(open_store)
    before = await store.take("before")
    spawned.clear()
    (workspace / "a.txt").write_text("changed, and the event lost")

    def overflowed(self: object) -> Iterator[Event]:
        return iter([Event(-1, IN_Q_OVERFLOW, 0, b"")])

    with monkeypatch.context() as patch:
        patch.setattr(Inotify, "read", overflowed)
        after = await store.take("after")
    assert "status" in spawned
    assert paths(await store.changes(before.id, after.id)) == {"a.txt": "modified"}


@journal_only
async def test_a_network_filesystem_gets_no_journal(
    workspace: Path, open_store: OpenStore, spawned: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal_module, "filesystem_of", lambda _: "nfs4")
    store = await journal_store(open_store)
    spawned.clear()
    (workspace / "a.txt").write_text("x")
    await store.take("by status")
    assert spawned.count("status") == 1


def test_the_filesystem_of_a_path_is_read_from_the_mounts(tmp_path: Path) -> None:
    kind = journal_module.filesystem_of(tmp_path)
    assert kind is not None
    assert kind not in journal_module.REMOTE_FILESYSTEMS


@journal_only
async def test_a_dead_git_process_is_started_again(workspace: Path, open_store: OpenStore) -> None:
    (workspace / "a.txt").write_text("x")
    store = await journal_store(open_store)
    before = await store.take("before")
    (workspace / "a.txt").write_text("y")
    after = await store.take("after")
    await store.changes(before.id, after.id)
    pipes = store._objects.pipes
    pids = [pipe.pid for pipe in pipes if pipe.pid is not None]
    assert len(pids) >= 2
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    (workspace / "a.txt").write_text("z")
    later = await store.take("later")
    assert paths(await store.changes(after.id, later.id)) == {"a.txt": "modified"}
    assert await store._objects.ignored([b"new.txt"], folders=False) == [False]
    assert await store._objects.kinds([later.id]) == ["commit"]
    assert not set(pids) & {pipe.pid for pipe in pipes}


@journal_only
async def test_a_git_process_that_cannot_answer_is_a_clear_error(
    workspace: Path, open_store: OpenStore
) -> None:
    (workspace / "a.txt").write_text("x")
    store = await journal_store(open_store)
    first = await store.take("first")
    cat = store._objects.pipes[0]
    await cat.aclose()
    cat.args = ("cat-file", "--no-such-option")
    with pytest.raises(CheckpointError, match="cat-file") as raised:
        await store._objects.read([first.id])
    assert "no-such-option" in raised.value.stderr


@journal_only
async def test_no_git_process_outlives_a_closed_store(
    workspace: Path, open_store: OpenStore
) -> None:
    (workspace / ".gitignore").write_text("*.log\n")
    store = await journal_store(open_store)
    before = await store.take("before")
    (workspace / "a.txt").write_text("y")
    (workspace / "x.log").write_text("ignored")
    after = await store.take("after")
    await store.changes(before.id, after.id)
    pids = [pipe.pid for pipe in store._objects.pipes if pipe.pid is not None]
    assert len(pids) == 3
    await store.aclose()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    # a closed store starts them again when used
    (workspace / "a.txt").write_text("z")
    assert (await store.take("again")).id != after.id


@journal_only
async def test_a_change_of_thousands_of_files_in_one_request_each(
    workspace: Path, open_store: OpenStore, spawned: list[str]
) -> None:
    """Requests and answers larger than a pipe holds: git answers while it is still asked."""
    store = await journal_store(open_store)
    before = await store.take("before")
    spawned.clear()
    shell(workspace, "mkdir many && cd many && for i in $(seq 6000); do echo $i > f$i; done")
    after = await asyncio.wait_for(store.take("after"), 60)
    changes = await asyncio.wait_for(store.changes(before.id, after.id), 60)
    assert len(changes) == 6000
    assert {change.status for change in changes} == {"added"}
    assert spawned == []
    # the objects the journal wrote itself are what git would have written
    run(["git", f"--git-dir={store.shadow_dir}", "fsck", "--strict", "--no-dangling"])


@journal_only
async def test_used_up_watches_turn_the_journal_off(
    workspace: Path, open_store: OpenStore, spawned: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def used_up(self: object, path: bytes, mask: int) -> int:
        raise WatchLimitError(28, "inotify watch limit reached")

    monkeypatch.setattr(Inotify, "add_watch", used_up)
    store = await journal_store(open_store)
    (workspace / "a.txt").write_text("x")
    spawned.clear()
    first = await store.take("by status")
    (workspace / "a.txt").write_text("y")
    second = await store.take("by status again")
    assert spawned.count("status") == 2
    assert paths(await store.changes(first.id, second.id)) == {"a.txt": "modified"}
