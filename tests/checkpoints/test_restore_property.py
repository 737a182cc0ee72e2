"""For any sequence of file operations with a checkpoint after each, restoring checkpoint k
gives back the workspace as it was at k: the same paths, bytes and exec bits; with the change
journal and with the status path alone, which make the same trees."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.checkpoints import CheckpointStore, Unavailable
from engine.config import CheckpointsConfig
from tests.checkpoints.conftest import run, snapshot

NAMES = st.sampled_from(["a", "b", "c.txt", "x y", "é"])
PATHS = st.lists(NAMES, min_size=1, max_size=3).map("/".join)


@dataclass(frozen=True)
class Write:
    path: str
    data: bytes
    executable: bool


@dataclass(frozen=True)
class Delete:
    path: str


@dataclass(frozen=True)
class MakeDirs:
    path: str


@dataclass(frozen=True)
class Link:
    """A symlink to a name beside it (which may be a file, a folder, nothing, or itself)."""

    path: str
    target: str


@dataclass(frozen=True)
class Move:
    """`mv`: a file or a folder to another name (what was there goes)."""

    path: str
    target: str


Operation = Write | Delete | MakeDirs | Link | Move

OPERATIONS = st.one_of(
    st.builds(Write, PATHS, st.binary(max_size=40), st.booleans()),
    st.builds(Delete, PATHS),
    st.builds(MakeDirs, PATHS),
    st.builds(Link, PATHS, NAMES),
    st.builds(Move, PATHS, PATHS),
)


def _clear_way(root: Path, path: str) -> None:
    """What a shell's `rm -rf` and `mkdir -p` would do to make room: a file where a folder must
    be goes."""
    parts = path.split("/")
    for depth in range(1, len(parts)):
        above = root.joinpath(*parts[:depth])
        if above.is_file():
            above.unlink()


def apply(root: Path, operation: Operation) -> None:
    """The operation as a shell would do it; one a shell would fail at (a path through a
    symlink loop) does nothing."""
    with contextlib.suppress(OSError):
        _apply(root, operation)


def _apply(root: Path, operation: Operation) -> None:
    target = root / operation.path
    match operation:
        case Write():
            _clear_way(root, operation.path)
            if target.is_dir():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(operation.data)
            target.chmod(0o755 if operation.executable else 0o644)
        case Delete():
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)
        case MakeDirs():
            _clear_way(root, operation.path)
            if target.is_file():
                target.unlink()
            target.mkdir(parents=True, exist_ok=True)
        case Link():
            _clear_way(root, operation.path)
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(operation.target)
        case Move():
            source = root / operation.path
            moving_in = (operation.target + "/").startswith(operation.path + "/")
            if not (source.is_symlink() or source.exists()) or moving_in:
                return
            destination = root / operation.target
            _clear_way(root, operation.target)
            _apply(root, Delete(operation.target))
            destination.parent.mkdir(parents=True, exist_ok=True)
            source.rename(destination)


async def _open(root: Path, data: Path, session: str, *, journal: bool) -> CheckpointStore:
    store = await CheckpointStore.open(root, data, CheckpointsConfig(), session, journal=journal)
    assert not isinstance(store, Unavailable)
    return store


def _tree(data: Path, commit: str) -> str:
    (shadow,) = (data / "checkpoints").iterdir()
    return run(["git", f"--git-dir={shadow}", "rev-parse", f"{commit}^{{tree}}"]).strip()


async def _scenario(
    root: Path, data: Path, steps: list[Operation], targets: list[int], journal: bool
) -> None:
    store = await _open(root, data, "prop", journal=journal)
    # a second session by status alone: its trees are the reference for the journal's
    reference = await _open(root, data, "reference", journal=False)
    try:
        seen = [snapshot(root)]
        ids = [(await store.take("start")).id]
        for step in steps:
            apply(root, step)
            seen.append(snapshot(root))
            ids.append((await store.take("step")).id)
            expected = await reference.take("step")
            assert _tree(data, ids[-1]) == _tree(data, expected.id), steps
        last = ids[-1]
        for pick in targets:
            k = pick % len(ids)
            plan = await store.plan_restore(ids[k], expected=last)
            assert plan.conflicts == ()
            result = await store.restore(plan)
            assert result.failed == ()
            assert snapshot(root) == seen[k], (k, steps)
            last = (await store.take("restored")).id
    finally:
        await store.aclose()
        await reference.aclose()


@pytest.mark.parametrize("journal", [True, False], ids=["journal", "status"])
@settings(max_examples=25, deadline=None)
@given(st.lists(OPERATIONS, max_size=8), st.lists(st.integers(0, 100), min_size=1, max_size=3))
def test_restoring_checkpoint_k_gives_back_the_workspace_at_k(
    journal: bool, steps: list[Operation], targets: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "ws")
        root.mkdir()
        asyncio.run(_scenario(root.resolve(), Path(tmp, "data"), steps, targets, journal))
