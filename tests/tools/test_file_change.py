"""The change a write_file or edit_file call would make, worked out before it runs: the same text
the tool then writes, or a plain reason when there is none to show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.tools import ToolContext, default_registry
from engine.tools.builtins import file_change as module
from engine.tools.builtins.file_change import FileChange, UnshownChange, file_change


async def after_the_call(ctx: ToolContext, tool: str, arguments: dict[str, Any]) -> str:
    """The file's text once the tool has really run the call."""
    out = await default_registry().call(tool, arguments, ctx)
    assert not out.is_error, out.content
    return (ctx.root / str(arguments["path"])).read_bytes().decode("utf-8")


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("edit_file", {"path": "hello.txt", "old": "three\n", "new": "THREE\nthree and a half\n"}),
        ("edit_file", {"path": "src/main.py", "old": "42", "new": "43"}),
        ("write_file", {"path": "hello.txt", "content": "one\n2\nthree\n"}),
        ("write_file", {"path": "new/dir/file.txt", "content": "fresh\n"}),
    ],
)
async def test_the_change_shown_is_the_text_the_tool_writes(
    root: Path, ctx: ToolContext, tool: str, arguments: dict[str, Any]
) -> None:
    target = root / arguments["path"]
    before = target.read_text(encoding="utf-8") if target.exists() else None
    change = file_change(root, tool, arguments)
    assert change == FileChange(
        arguments["path"], before, await after_the_call(ctx, tool, arguments)
    )


async def test_an_edit_of_a_crlf_file_keeps_its_line_endings_as_the_tool_does(
    root: Path, ctx: ToolContext
) -> None:
    (root / "dos.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    arguments = {"path": "dos.txt", "old": "b\nc", "new": "B\nC"}
    change = file_change(root, "edit_file", arguments)
    assert isinstance(change, FileChange)
    assert change.after == "a\r\nB\r\nC\r\n"
    await after_the_call(ctx, "edit_file", arguments)
    assert (root / "dos.txt").read_bytes() == change.after.encode()


def test_a_new_file_has_no_text_before(root: Path) -> None:
    change = file_change(root, "write_file", {"path": "fresh.txt", "content": "x\n"})
    assert change == FileChange("fresh.txt", None, "x\n")


def test_the_path_is_named_relative_to_the_workspace(root: Path) -> None:
    change = file_change(root, "write_file", {"path": f"{root}/src/../hello.txt", "content": ""})
    assert isinstance(change, FileChange)
    assert change.path == "hello.txt"


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (
            {"path": "hello.txt", "old": "six", "new": "6"},
            "old text not found in 'hello.txt'; it must match the file exactly",
        ),
        (
            {"path": "hello.txt", "old": "o", "new": "0"},
            "old text occurs 3 times in 'hello.txt' (at lines 1, 2, 4)",
        ),
        ({"path": "missing.txt", "old": "a", "new": "b"}, "file 'missing.txt' not found"),
        ({"path": "blob.bin", "old": "a", "new": "b"}, "'blob.bin' is a binary file (70 bytes)"),
        ({"path": "src", "old": "a", "new": "b"}, "'src' is a directory; edit_file would fail"),
        (
            {"path": "../outside.txt", "old": "a", "new": "b"},
            "path '../outside.txt' is outside the workspace; edit_file would refuse it",
        ),
    ],
)
def test_an_edit_that_would_fail_says_why_instead_of_a_change(
    root: Path, arguments: dict[str, str], reason: str
) -> None:
    change = file_change(root, "edit_file", arguments)
    assert isinstance(change, UnshownChange)
    assert change.call_fails
    assert reason in change.reason


def test_a_path_the_file_system_refuses_is_a_call_that_would_fail(root: Path) -> None:
    name = "x" * 5000  # longer than any file system's name limit
    for tool, arguments in [
        ("write_file", {"path": name, "content": "x"}),
        ("edit_file", {"path": name, "old": "a", "new": "b"}),
    ]:
        change = file_change(root, tool, arguments)
        assert isinstance(change, UnshownChange)
        assert change.call_fails
        assert change.reason.startswith(f"cannot read '{name}': File name too long")


def test_a_write_over_a_binary_file_says_so_and_does_not_fail(root: Path) -> None:
    change = file_change(root, "write_file", {"path": "blob.bin", "content": "text now\n"})
    assert change == UnshownChange("blob.bin", "'blob.bin' is a binary file (70 bytes)")


def test_a_write_over_a_directory_would_fail(root: Path) -> None:
    change = file_change(root, "write_file", {"path": "src", "content": "x"})
    assert change == UnshownChange("src", "'src' is a directory", call_fails=True)


def test_a_file_too_large_is_not_read_and_says_its_size(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "PREVIEW_BYTES", 2048)
    (root / "big.log").write_text("x" * 99 + "\n" * 3000, encoding="utf-8")
    for change in (
        file_change(root, "write_file", {"path": "big.log", "content": "small\n"}),
        file_change(root, "edit_file", {"path": "big.log", "old": "x", "new": "y"}),
    ):
        assert change == UnshownChange(
            "big.log", "'big.log' has 3 KiB, more than the 2 KiB shown as a change"
        )


def test_new_text_too_large_says_its_size(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "PREVIEW_BYTES", 2048)
    change = file_change(root, "write_file", {"path": "hello.txt", "content": "y" * 5000})
    assert change == UnshownChange(
        "hello.txt", "the new 'hello.txt' has 5 KiB, more than the 2 KiB shown as a change"
    )


def test_other_tools_and_arguments_the_tool_rejects_have_no_change(root: Path) -> None:
    assert file_change(root, "run_shell", {"command": "ls"}) is None
    assert file_change(root, "write_file", {"path": "a.txt"}) is None  # no content
    assert file_change(root, "edit_file", {"path": "a.txt", "old": "", "new": "x"}) is None
