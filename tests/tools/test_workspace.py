"""Path confinement: `..`, absolute paths and symlinks cannot leave the workspace root."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.tools import WorkspaceEscapeError, resolve_in_workspace
from engine.tools.workspace import relative_to_workspace


def test_relative_paths_resolve_inside(root: Path) -> None:
    assert resolve_in_workspace(root, "src/main.py") == (root / "src" / "main.py").resolve()
    assert resolve_in_workspace(root, "src/../hello.txt") == (root / "hello.txt").resolve()
    assert resolve_in_workspace(root, "new/dir/file.txt").is_relative_to(root.resolve())
    assert relative_to_workspace(root, resolve_in_workspace(root, ".")) == "."


def test_absolute_path_inside_the_root_is_allowed(root: Path) -> None:
    assert resolve_in_workspace(root, str(root / "hello.txt")) == (root / "hello.txt").resolve()


@pytest.mark.parametrize("path", ["..", "../outside.txt", "src/../../outside.txt", "/etc/passwd"])
def test_escapes_are_refused(root: Path, path: str) -> None:
    with pytest.raises(WorkspaceEscapeError, match="outside the workspace") as caught:
        resolve_in_workspace(root, path)
    assert caught.value.path == path


def test_symlink_to_outside_is_refused(root: Path) -> None:
    (root / "link.txt").symlink_to(root.parent / "outside.txt")
    (root / "linkdir").symlink_to(root.parent / "outdir")
    with pytest.raises(WorkspaceEscapeError, match="symlink"):
        resolve_in_workspace(root, "link.txt")
    with pytest.raises(WorkspaceEscapeError, match="symlink"):
        resolve_in_workspace(root, "linkdir/leak.txt")


def test_symlink_inside_the_workspace_is_followed(root: Path) -> None:
    (root / "alias.txt").symlink_to(root / "hello.txt")
    assert resolve_in_workspace(root, "alias.txt") == (root / "hello.txt").resolve()
