"""The shadow repository ignores the user's git setup and never touches what is not its own:
the workspace's `.git`, nested repositories, and whatever a symlink points at."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.checkpoints.conftest import OpenStore, run, snapshot


@pytest.fixture
def hostile_git_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user whose git runs hooks, converts line endings and filters through attributes."""
    home = tmp_path / "home"
    hooks = home / "hooks"
    hooks.mkdir(parents=True)
    marker = tmp_path / "hook-ran"
    for hook in ("pre-commit", "post-commit", "reference-transaction", "post-index-change"):
        script = hooks / hook
        script.write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
        script.chmod(0o755)
    (home / ".gitconfig").write_text(
        "[core]\n"
        f"\thooksPath = {hooks}\n"
        "\tautocrlf = true\n"
        "\tattributesFile = ~/.gitattributes\n"
        '[filter "shout"]\n'
        "\tclean = tr a-z A-Z\n"
        "\tsmudge = tr A-Z a-z\n"
        "\trequired = true\n"
    )
    (home / ".gitattributes").write_text("* filter=shout\n")
    xdg = home / ".config"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "ignore").write_text("*.txt\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere.git"))
    return marker


async def test_user_git_config_hooks_and_attributes_are_ignored(
    workspace: Path, open_store: OpenStore, hostile_git_home: Path
) -> None:
    (workspace / ".gitattributes").write_text("*.txt filter=shout eol=crlf\n")
    crlf = b"dos line\r\nunix line\n"
    (workspace / "notes.txt").write_bytes(crlf)
    store = await open_store()
    first = await store.take("first")
    (workspace / "notes.txt").write_bytes(b"changed\n")
    second = await store.take("second")
    (change,) = await store.changes(first.id, second.id)
    assert change.path == "notes.txt"  # not hidden by the user's global ignore
    assert change.diff is not None
    assert "-dos line\r\n-unix line\n+changed\n" in change.diff  # bytes as they were
    plan = await store.plan_restore(first.id, expected=second.id)
    await store.restore(plan)
    assert (workspace / "notes.txt").read_bytes() == crlf
    assert not await asyncio.to_thread(hostile_git_home.exists)


async def test_the_workspace_repository_is_untouched(
    workspace: Path, open_store: OpenStore
) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x"}
    env |= {"GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}
    run(["git", "init", "-q", str(workspace)], env=env)
    (workspace / "tracked.txt").write_text("v1\n")
    run(["git", "add", "tracked.txt"], cwd=workspace, env=env)
    run(["git", "commit", "-qm", "one"], cwd=workspace, env=env)
    git = workspace / ".git"
    before = {p: p.read_bytes() for p in (git / "HEAD", git / "index")}
    listing = sorted(str(p) for p in git.rglob("*"))
    store = await open_store()
    first = await store.take("first")
    (workspace / "tracked.txt").write_text("v2\n")
    second = await store.take("second")
    changes = await store.changes(first.id, second.id)
    assert [c.path for c in changes] == ["tracked.txt"]
    await store.restore(await store.plan_restore(first.id, expected=second.id))
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(str(p) for p in git.rglob("*")) == listing


async def test_nested_repositories_are_left_out(workspace: Path, open_store: OpenStore) -> None:
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    run(["git", "init", "-q", str(nested)])
    (nested / "code.c").write_text("int x;\n")
    (workspace / "mine.txt").write_text("mine\n")
    store = await open_store()
    checkpoint = await store.take("first")
    assert checkpoint.nested_repositories == ("vendor/lib",)
    files = run(
        ["git", f"--git-dir={store.shadow_dir}", "ls-tree", "-r", "--name-only", checkpoint.id]
    )
    assert files.split() == ["mine.txt"]


async def test_a_symlink_outside_is_restored_as_a_link_never_written_through(
    tmp_path: Path, workspace: Path, open_store: OpenStore
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not the workspace's\n")
    (workspace / "link.txt").symlink_to(outside)
    (workspace / "dir").mkdir()
    (workspace / "dir" / "inner.txt").write_text("inner\n")
    store = await open_store()
    start = await store.take("start")
    start_files = snapshot(workspace)
    # the agent replaces the link by a file, and writes through a new link to a folder outside
    (workspace / "link.txt").unlink()
    (workspace / "link.txt").write_text("a file now\n")
    outside_dir = tmp_path / "outside-dir"
    outside_dir.mkdir()
    run(["rm", "-r", str(workspace / "dir")])
    (workspace / "dir").symlink_to(outside_dir)
    end = await store.take("end")
    plan = await store.plan_restore(start.id, expected=end.id)
    assert [note.path for note in plan.outside_links] == ["link.txt"]
    result = await store.restore(plan)
    assert result.failed == ()
    assert snapshot(workspace) == start_files
    assert os.readlink(workspace / "link.txt") == str(outside)
    assert outside.read_text() == "not the workspace's\n"
    assert list(outside_dir.iterdir()) == []


async def test_a_symlinked_folder_on_the_way_is_refused(
    tmp_path: Path, workspace: Path, open_store: OpenStore
) -> None:
    (workspace / "dir").mkdir()
    (workspace / "dir" / "file.txt").write_text("v1\n")
    store = await open_store()
    start = await store.take("start")
    (workspace / "dir" / "file.txt").write_text("v2\n")
    end = await store.take("end")
    plan = await store.plan_restore(start.id, expected=end.id)
    # someone swaps the folder for a link to outside between the plan and the restore
    outside_dir = tmp_path / "outside-dir"
    outside_dir.mkdir()
    (outside_dir / "file.txt").write_text("outside\n")
    run(["rm", "-r", str(workspace / "dir")])
    (workspace / "dir").symlink_to(outside_dir)
    result = await store.restore(plan, overwrite=True)
    assert [note.path for note in result.failed] == ["dir/file.txt"]
    assert (outside_dir / "file.txt").read_text() == "outside\n"
