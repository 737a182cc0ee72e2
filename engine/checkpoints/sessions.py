"""Which sessions each workspace's shadow repository holds checkpoints of, and deleting a
session with its checkpoints: every front end's delete (`trellis delete`, the console's session
browser, ACP's `session/delete`) goes through `delete_session`, so none leaves them behind."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.checkpoints.large_files import LargeFileLedger
from engine.checkpoints.shadow_repo import CheckpointError, ShadowRepo, git_binary
from engine.checkpoints.store import REF_ROOT, SESSION_ID, CheckpointStore
from engine.checkpoints.usage import WorkspaceUsage, disk_usage
from engine.config import CheckpointsConfig

if TYPE_CHECKING:
    from engine.store.base import SessionStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ShadowHoldings:
    """A workspace's shadow repository: its disk use and the sessions it keeps checkpoints of,
    each with how many."""

    usage: WorkspaceUsage
    sessions: tuple[tuple[str, int], ...]


def _repo(git: str, usage: WorkspaceUsage) -> ShadowRepo:
    """The repository as git commands that need no work tree see it: a workspace that is gone
    (moved, deleted) still has its checkpoints listed and pruned."""
    workspace = Path(usage.workspace) if usage.workspace else usage.shadow_dir
    return ShadowRepo(git, usage.shadow_dir, workspace if workspace.is_dir() else usage.shadow_dir)


async def _sessions(repo: ShadowRepo) -> tuple[tuple[str, int], ...]:
    out = await repo.run("for-each-ref", "--format=%(refname)", f"{REF_ROOT}/")
    counts: dict[str, int] = {}
    for ref in out.decode("ascii").split():
        session = ref.removeprefix(f"{REF_ROOT}/").split("/", 1)[0]
        counts[session] = counts.get(session, 0) + 1
    return tuple(sorted(counts.items()))


async def holdings(data_dir: Path) -> tuple[ShadowHoldings, ...]:
    """Every shadow repository under `data_dir`, largest first, with its sessions (none listed
    when `git` is missing: only git can read them). Raises `CheckpointError` for a repository
    git cannot read."""
    usages = await asyncio.to_thread(disk_usage, data_dir)
    git = git_binary()
    found: list[ShadowHoldings] = []
    for usage in usages:
        sessions = await _sessions(_repo(git, usage)) if git is not None else ()
        found.append(ShadowHoldings(usage, sessions))
    return tuple(found)


async def prune_session(data_dir: Path, session_id: str) -> tuple[Path, ...]:
    """Drop `session_id`'s checkpoints from every shadow repository under `data_dir` that holds
    some (`CheckpointStore.prune`); the repositories pruned. Raises `CheckpointError` when git
    fails."""
    git = git_binary()
    if git is None or not SESSION_ID.fullmatch(session_id):
        return ()
    pruned: list[Path] = []
    for usage in await asyncio.to_thread(disk_usage, data_dir):
        repo = _repo(git, usage)
        if session_id not in dict(await _sessions(repo)):
            continue
        ledger = await asyncio.to_thread(
            LargeFileLedger,
            repo.workspace,
            repo.git_dir / f"large-{session_id}.json",
            repo.git_dir / f"large-{session_id}.exclude",
        )
        store = CheckpointStore(repo, CheckpointsConfig(), session_id, (), ledger, time.time)
        await store.prune(session_id)
        pruned.append(usage.shadow_dir)
    return tuple(pruned)


async def delete_session(store: SessionStore, session_id: str, data_dir: Path) -> str | None:
    """Delete the stored session, then its checkpoints on this host. The session is gone once
    the store says so; a prune that fails after is returned as a sentence (the checkpoints stay,
    a later `trellis checkpoints` shows them), never raised."""
    await store.delete(session_id)
    try:
        await prune_session(data_dir, session_id)
    except (CheckpointError, OSError, ValueError) as exc:
        log.warning("checkpoints of deleted session %s not pruned: %s", session_id, exc)
        return f"its checkpoints could not be pruned: {exc}"
    return None
