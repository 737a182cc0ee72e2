"""A file in a folder that cannot be read is reported in the same words as a file that cannot be
read ("cannot read 'x': Permission denied"), by every tool and by `@path` and `/watch`, never as a
raw `PermissionError: [Errno 13] ...`.

The folder and the file are made unreadable for real (mode 000). As root, which the mode does not
stop, the OS calls are made to fail as they fail for everyone else: `stat` and `open` of anything
inside the folder, and `open` of the file, raise `PermissionError` with errno 13.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.attachment_files import attachments_of
from engine.context.areas.watch import WatchArea
from engine.tools import ToolContext, ToolOutput, default_registry

DENIED = os.strerror(errno.EACCES)


@pytest.fixture
def unreadable(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`locked/inner.txt` in a folder of mode 000, and `secret.txt` of mode 000."""
    (root / "locked").mkdir()
    (root / "locked" / "inner.txt").write_text("inside\n")
    (root / "secret.txt").write_text("secret\n")
    (root / "secret.txt").chmod(0)
    (root / "locked").chmod(0)
    if os.geteuid() == 0:
        folder = str((root / "locked").resolve())
        secret = str((root / "secret.txt").resolve())

        def inside(path: str | os.PathLike[str]) -> bool:
            return os.fspath(path).startswith(folder + os.sep)

        monkeypatch.setattr(os, "stat", _denied(os.stat, inside))
        monkeypatch.setattr(
            os, "open", _denied(os.open, lambda path: inside(path) or os.fspath(path) == secret)
        )
    yield
    (root / "locked").chmod(0o755)
    (root / "secret.txt").chmod(0o644)


def _denied(
    call: Callable[..., Any], denies: Callable[[str | os.PathLike[str]], bool]
) -> Callable[..., Any]:
    def checked(path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(path, str | os.PathLike) and denies(path):
            raise PermissionError(errno.EACCES, DENIED, os.fspath(path))
        return call(path, *args, **kwargs)

    return checked


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolOutput:
    return await default_registry().call(name, arguments, ctx)


@pytest.mark.usefixtures("unreadable")
async def test_read_file_says_the_same_for_a_file_and_for_a_folder(ctx: ToolContext) -> None:
    file = await call(ctx, "read_file", path="secret.txt")
    inside = await call(ctx, "read_file", path="locked/inner.txt")
    assert (file.is_error, file.content) == (True, f"cannot read 'secret.txt': {DENIED}")
    assert (inside.is_error, inside.content) == (
        True,
        f"cannot read 'locked/inner.txt': {DENIED}",
    )


@pytest.mark.usefixtures("unreadable")
async def test_the_other_tools_name_the_path_and_the_reason(ctx: ToolContext) -> None:
    edited = await call(ctx, "edit_file", path="locked/inner.txt", old="inside", new="out")
    assert edited.content == f"cannot read 'locked/inner.txt': {DENIED}"
    assert (await call(ctx, "edit_file", path="secret.txt", old="s", new="t")).content == (
        f"cannot read 'secret.txt': {DENIED}"
    )
    written = await call(ctx, "write_file", path="locked/new.txt", content="x")
    assert written.content == f"cannot write 'locked/new.txt': {DENIED}"
    listed = await call(ctx, "list_files", path="locked/deeper")
    assert listed.content == f"cannot list 'locked/deeper': {DENIED}"
    searched = await call(ctx, "search", pattern="x", path="locked/inner.txt")
    assert searched.content == f"cannot search 'locked/inner.txt': {DENIED}"
    for output in (edited, written, listed, searched):
        assert output.is_error
        assert "Errno" not in output.content


@pytest.mark.usefixtures("unreadable")
def test_an_attachment_gives_the_same_reason_for_a_file_and_for_a_folder(root: Path) -> None:
    attached, problems = attachments_of("see @secret.txt and @locked/inner.txt", root)
    assert attached == []
    assert problems == [
        f"cannot read 'secret.txt': {DENIED}",
        f"cannot read 'locked/inner.txt': {DENIED}",
    ]


@pytest.mark.usefixtures("unreadable")
def test_a_watched_file_that_cannot_be_read_is_not_called_missing(root: Path) -> None:
    for path in ("secret.txt", "locked/inner.txt"):
        (message,) = WatchArea(path, root).render()
        assert message.content == f"Watched file {path}: (cannot read it: {DENIED})"
    (missing,) = WatchArea("nope.txt", root).render()
    assert missing.content == "Watched file nope.txt: (missing)"
