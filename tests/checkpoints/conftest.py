"""A workspace and a data directory per test, and a store opened on them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from engine.checkpoints import CheckpointStore, Unavailable
from engine.config import CheckpointsConfig

OpenStore = Callable[..., Awaitable[CheckpointStore]]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture(params=["journal", "status"])
async def open_store(
    workspace: Path, data_dir: Path, request: pytest.FixtureRequest
) -> AsyncIterator[OpenStore]:
    """Each test runs with the change journal, and again with every checkpoint by status."""
    opened_stores: list[CheckpointStore] = []

    async def opened(
        session: str = "s1", *, journal: bool | None = None, **settings: object
    ) -> CheckpointStore:
        store = await CheckpointStore.open(
            workspace,
            data_dir,
            CheckpointsConfig.model_validate(settings),
            session,
            secret_patterns=(".env*", "*.pem"),
            journal=request.param == "journal" if journal is None else journal,
        )
        assert not isinstance(store, Unavailable), store
        opened_stores.append(store)
        return store

    yield opened
    for store in opened_stores:
        await store.aclose()


def snapshot(root: Path) -> dict[str, tuple[str, bytes, bool]]:
    """Every entry under `root` but `.git`: kind, bytes (a link's target) and exec bit."""
    found: dict[str, tuple[str, bytes, bool]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            if os.path.islink(path):
                found[relative] = ("link", os.fsencode(os.readlink(path)), False)
            else:
                with open(path, "rb") as raw:
                    data = raw.read()
                found[relative] = ("file", data, os.access(path, os.X_OK))
    return found


def run(args: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """A command to its end (tests only: a moment of the loop is nothing to them); its stdout,
    or raises on a non-zero exit."""
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"{args} failed ({done.returncode}): {done.stderr}")
    return done.stdout


def checkpoint_refs(shadow_dir: Path) -> list[str]:
    """The refs of a shadow repository, read by git alone: cheaper than `holdings` over a data
    directory many tests share."""
    return run(["git", f"--git-dir={shadow_dir}", "for-each-ref", "--format=%(refname)"]).split()
