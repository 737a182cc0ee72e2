"""For any sequence of file operations with a checkpoint after each, restoring checkpoint k
gives back the workspace as it was at k: the same paths, bytes and exec bits."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.checkpoints import CheckpointStore, Unavailable
from engine.config import CheckpointsConfig
from tests.checkpoints.conftest import snapshot

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


Operation = Write | Delete | MakeDirs | Link

OPERATIONS = st.one_of(
    st.builds(Write, PATHS, st.binary(max_size=40), st.booleans()),
    st.builds(Delete, PATHS),
    st.builds(MakeDirs, PATHS),
    st.builds(Link, PATHS, NAMES),
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


async def _scenario(root: Path, data: Path, steps: list[Operation], targets: list[int]) -> None:
    store = await CheckpointStore.open(root, data, CheckpointsConfig(), "prop")
    assert not isinstance(store, Unavailable)
    seen = [snapshot(root)]
    ids = [(await store.take("start")).id]
    for step in steps:
        apply(root, step)
        seen.append(snapshot(root))
        ids.append((await store.take("step")).id)
    last = ids[-1]
    for pick in targets:
        k = pick % len(ids)
        plan = await store.plan_restore(ids[k], expected=last)
        assert plan.conflicts == ()
        result = await store.restore(plan)
        assert result.failed == ()
        assert snapshot(root) == seen[k], (k, steps)
        last = (await store.take("restored")).id


@settings(max_examples=25, deadline=None)
@given(st.lists(OPERATIONS, max_size=8), st.lists(st.integers(0, 100), min_size=1, max_size=3))
def test_restoring_checkpoint_k_gives_back_the_workspace_at_k(
    steps: list[Operation], targets: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "ws")
        root.mkdir()
        asyncio.run(_scenario(root.resolve(), Path(tmp, "data"), steps, targets))
