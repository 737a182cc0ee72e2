"""Which sessions a shadow repository holds, and a deleted session's checkpoints pruned
(`engine.checkpoints.sessions`): the last session of a repository too, a workspace that is gone,
and the one delete every front end uses."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.checkpoints.sessions import delete_session, holdings, prune_session
from engine.store.errors import StoreError
from engine.store.sqlite.store import SQLiteStore
from tests.checkpoints.conftest import OpenStore, run


async def test_holdings_list_each_repository_with_its_sessions(
    workspace: Path, data_dir: Path, open_store: OpenStore
) -> None:
    one = await open_store("one")
    two = await open_store("two")
    (workspace / "a.txt").write_text("a\n")
    await one.take("first")
    (workspace / "a.txt").write_text("b\n")
    await one.take("second")
    await two.take("first")
    (held,) = await holdings(data_dir)
    assert held.usage.workspace == str(workspace)
    assert held.usage.shadow_dir == one.shadow_dir
    assert held.usage.bytes > 0
    assert held.sessions == (("one", 2), ("two", 1))


async def test_pruning_the_last_session_leaves_a_repository_git_still_reads(
    workspace: Path, data_dir: Path, open_store: OpenStore
) -> None:
    store = await open_store("only")
    (workspace / "a.txt").write_text("a\n")
    taken = await store.take("first")
    assert await prune_session(data_dir, "only") == (store.shadow_dir,)
    (held,) = await holdings(data_dir)
    assert held.sessions == ()
    shadow = store.shadow_dir
    assert run(["git", f"--git-dir={shadow}", "rev-parse", "--git-dir"]).strip() == str(shadow)
    assert "commit" not in run(
        ["git", f"--git-dir={shadow}", "cat-file", "--batch-all-objects", "--batch-check"]
    )
    # a session that starts after takes its checkpoints there as in a new repository
    again = await open_store("next")
    after = await again.take("after")
    assert after.id != taken.id
    assert run(["git", f"--git-dir={shadow}", "cat-file", "-t", after.id]).strip() == "commit"


async def test_a_session_of_a_workspace_that_is_gone_is_pruned(
    workspace: Path, data_dir: Path, open_store: OpenStore
) -> None:
    store = await open_store("gone")
    (workspace / "a.txt").write_text("a\n")
    await store.take("first")
    shutil.rmtree(workspace)
    assert await prune_session(data_dir, "gone") == (store.shadow_dir,)
    (held,) = await holdings(data_dir)
    assert held.sessions == ()


async def test_prune_of_a_session_with_no_checkpoints_touches_nothing(
    workspace: Path, data_dir: Path, open_store: OpenStore
) -> None:
    store = await open_store("kept")
    (workspace / "a.txt").write_text("a\n")
    await store.take("first")
    assert await prune_session(data_dir, "other") == ()
    assert await prune_session(data_dir, "not a ref name") == ()
    assert await prune_session(data_dir / "nowhere", "kept") == ()
    (held,) = await holdings(data_dir)
    assert held.sessions == (("kept", 1),)


async def test_delete_session_deletes_then_prunes(
    workspace: Path, data_dir: Path, open_store: OpenStore, tmp_path: Path
) -> None:
    async with SQLiteStore(tmp_path / "sessions.sqlite") as sessions:
        session_id = (await sessions.create(cwd=str(workspace))).id
        store = await open_store(session_id)
        (workspace / "a.txt").write_text("a\n")
        await store.take("first")
        assert await delete_session(sessions, session_id, data_dir) is None
        with pytest.raises(StoreError):
            await sessions.info(session_id)
    (held,) = await holdings(data_dir)
    assert held.sessions == ()
