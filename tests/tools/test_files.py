"""The file tools on a real temporary workspace: ranges, errors, bounds, labels and confinement."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine.privacy import PrivacyClass
from engine.tools import ToolContext, ToolOutput, default_registry


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolOutput:
    return await default_registry().call(name, arguments, ctx)


# --- read_file ------------------------------------------------------------------------------------


async def test_read_whole_file_is_internal(ctx: ToolContext) -> None:
    out = await call(ctx, "read_file", path="hello.txt")
    assert not out.is_error
    assert out.content == "one\ntwo\nthree\nfour\nfive\n"
    assert out.label is not None
    assert out.label.cls == PrivacyClass.internal
    assert out.label.parents == frozenset({"hello.txt"})


async def test_read_line_range(ctx: ToolContext) -> None:
    assert (await call(ctx, "read_file", path="hello.txt", start_line=2, end_line=3)).content == (
        "two\nthree\n"
    )
    assert (await call(ctx, "read_file", path="hello.txt", start_line=4)).content == "four\nfive\n"
    assert (await call(ctx, "read_file", path="hello.txt", end_line=1)).content == "one\n"
    assert (await call(ctx, "read_file", path="hello.txt", start_line=5, end_line=99)).content == (
        "five\n"
    )


async def test_read_range_errors(ctx: ToolContext) -> None:
    past = await call(ctx, "read_file", path="hello.txt", start_line=9)
    assert past.is_error
    assert "past the end" in past.content
    assert "5 lines" in past.content
    backwards = await call(ctx, "read_file", path="hello.txt", start_line=3, end_line=2)
    assert backwards.is_error
    assert "end_line (2) is before start_line (3)" in backwards.content
    zero = await call(ctx, "read_file", path="hello.txt", start_line=0)
    assert zero.is_error
    assert "start_line" in zero.content


async def test_read_empty_file(root: Path, ctx: ToolContext) -> None:
    (root / "empty.txt").write_text("")
    out = await call(ctx, "read_file", path="empty.txt")
    assert not out.is_error
    assert out.content == ""


async def test_read_secret_file_is_restricted(root: Path, ctx: ToolContext) -> None:
    out = await call(ctx, "read_file", path=".env")
    assert out.content == "API_KEY=sk-secret\n"
    assert out.label is not None
    assert out.label.cls == PrivacyClass.restricted
    assert out.label.parents == frozenset({".env"})
    (root / "src" / "server.pem").write_text("-----BEGIN-----\n")
    pem = await call(ctx, "read_file", path="src/server.pem")
    assert pem.label is not None
    assert pem.label.cls == PrivacyClass.restricted


async def test_secret_patterns_are_configurable(root: Path, ctx: ToolContext) -> None:
    custom = replace(ctx, secret_patterns=("*.txt",))
    out = await call(custom, "read_file", path="hello.txt")
    assert out.label is not None
    assert out.label.cls == PrivacyClass.restricted
    env = await call(custom, "read_file", path=".env")
    assert env.label is not None
    assert env.label.cls == PrivacyClass.internal


async def test_read_missing_directory_and_binary(ctx: ToolContext) -> None:
    missing = await call(ctx, "read_file", path="nope.txt")
    assert missing.is_error
    assert "'nope.txt' not found" in missing.content
    directory = await call(ctx, "read_file", path="src")
    assert directory.is_error
    assert "directory" in directory.content
    binary = await call(ctx, "read_file", path="blob.bin")
    assert binary.is_error
    assert "binary" in binary.content
    assert "PNG" not in binary.content


async def test_read_is_truncated_with_a_marker(root: Path, ctx: ToolContext) -> None:
    (root / "big.txt").write_text("".join(f"line {n:04d}\n" for n in range(1, 1001)))
    small = replace(ctx, max_output=95)
    out = await call(small, "read_file", path="big.txt")
    assert not out.is_error
    body, _, marker = out.content.partition("\n[output cut")
    assert body == "".join(f"line {n:04d}\n" for n in range(1, 10))  # whole lines only
    assert "lines 1-9 shown; continue with start_line=10, end_line=18]" in marker
    rest = await call(small, "read_file", path="big.txt", start_line=10, end_line=18)
    assert rest.content == "".join(f"line {n:04d}\n" for n in range(10, 19))
    ranged = await call(small, "read_file", path="big.txt", start_line=995, end_line=1000)
    assert not ranged.is_error
    assert "[output cut" not in ranged.content
    capped = await call(small, "read_file", path="big.txt", start_line=100, end_line=112)
    assert "continue with start_line=109, end_line=112]" in capped.content


async def test_read_huge_single_line_is_bounded(root: Path, ctx: ToolContext) -> None:
    (root / "minified.js").write_text("x" * 200_000)
    out = await call(replace(ctx, max_output=1000), "read_file", path="minified.js")
    assert out.content == (
        "x" * 1000 + "\n[output cut at 1,000 characters of a 200,000-byte file: "
        "line 1 alone is longer than 1,000 characters; only its start is shown]"
    )
    (root / "minified.js").write_text("x" * 200_000 + "\nnext\n")
    out = await call(replace(ctx, max_output=1000), "read_file", path="minified.js")
    assert out.content.endswith("continue with start_line=2, end_line=2]")


# --- list_files -----------------------------------------------------------------------------------


async def test_list_root_and_subdirectory(ctx: ToolContext) -> None:
    out = await call(ctx, "list_files")
    assert out.content.splitlines() == [".env", "blob.bin", "hello.txt", "src/"]
    assert out.label is not None
    assert out.label.cls == PrivacyClass.internal
    sub = await call(ctx, "list_files", path="src")
    assert sub.content == "main.py"


async def test_list_errors_and_empty(root: Path, ctx: ToolContext) -> None:
    assert "not found" in (await call(ctx, "list_files", path="nope")).content
    is_file = await call(ctx, "list_files", path="hello.txt")
    assert is_file.is_error
    assert "read_file" in is_file.content
    (root / "empty").mkdir()
    empty = await call(ctx, "list_files", path="empty")
    assert not empty.is_error
    assert "empty" in empty.content


async def test_list_is_truncated(root: Path, ctx: ToolContext) -> None:
    for n in range(50):
        (root / "src" / f"module_{n:02d}.py").write_text("")
    out = await call(replace(ctx, max_output=60), "list_files", path="src")
    assert "[output truncated: 60 of" in out.content


# --- write_file -----------------------------------------------------------------------------------


async def test_write_creates_and_replaces(root: Path, ctx: ToolContext) -> None:
    out = await call(ctx, "write_file", path="docs/new/readme.md", content="# Hi\nthere\n")
    assert not out.is_error
    assert out.content.startswith("created docs/new/readme.md")
    assert (root / "docs" / "new" / "readme.md").read_text() == "# Hi\nthere\n"
    assert out.label is not None
    assert out.label.cls == PrivacyClass.internal
    again = await call(ctx, "write_file", path="hello.txt", content="replaced")
    assert again.content.startswith("replaced hello.txt")
    assert (root / "hello.txt").read_text() == "replaced"


async def test_write_to_directory_is_an_error(ctx: ToolContext) -> None:
    out = await call(ctx, "write_file", path="src", content="x")
    assert out.is_error
    assert "directory" in out.content


# --- edit_file ------------------------------------------------------------------------------------


async def test_edit_replaces_the_unique_occurrence(root: Path, ctx: ToolContext) -> None:
    out = await call(ctx, "edit_file", path="src/main.py", old="return 42", new="return 43")
    assert not out.is_error
    assert "line 2" in out.content
    assert (root / "src" / "main.py").read_text() == "def main():\n    return 43\n"


async def test_edit_with_no_match_is_a_readable_error(root: Path, ctx: ToolContext) -> None:
    out = await call(ctx, "edit_file", path="hello.txt", old="six", new="6")
    assert out.is_error
    assert "not found" in out.content
    assert (root / "hello.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"


async def test_edit_with_several_matches_is_a_readable_error(root: Path, ctx: ToolContext) -> None:
    (root / "dup.txt").write_text("x = 1\ny = 2\nx = 1\n")
    out = await call(ctx, "edit_file", path="dup.txt", old="x = 1", new="x = 3")
    assert out.is_error
    assert "occurs 2 times" in out.content
    assert "lines 1, 3" in out.content
    assert (root / "dup.txt").read_text() == "x = 1\ny = 2\nx = 1\n"


async def test_edit_keeps_crlf_line_endings(root: Path, ctx: ToolContext) -> None:
    (root / "win.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    out = await call(ctx, "edit_file", path="win.txt", old="a\nb", new="A\nB")
    assert not out.is_error
    assert (root / "win.txt").read_bytes() == b"A\r\nB\r\nc\r\n"


async def test_edit_refuses_missing_binary_and_empty_old(ctx: ToolContext) -> None:
    assert "not found" in (await call(ctx, "edit_file", path="no.txt", old="a", new="b")).content
    binary = await call(ctx, "edit_file", path="blob.bin", old="PNG", new="GIF")
    assert binary.is_error
    assert "binary" in binary.content
    empty = await call(ctx, "edit_file", path="hello.txt", old="", new="b")
    assert empty.is_error
    assert "old" in empty.content


# --- confinement, for every path-taking tool ------------------------------------------------------

PATH_TOOLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {}),
    ("list_files", {}),
    ("search", {"pattern": "secret|leak"}),
    ("write_file", {"content": "pwned"}),
    ("edit_file", {"old": "outside", "new": "pwned"}),
]


def _escapes(root: Path) -> list[str]:
    (root / "link.txt").symlink_to(root.parent / "outside.txt")
    (root / "linkdir").symlink_to(root.parent / "outdir")
    return [
        "../outside.txt",
        "src/../../outside.txt",
        str(root.parent / "outside.txt"),
        "link.txt",
        "linkdir",
        "linkdir/leak.txt",
    ]


@pytest.mark.parametrize(("name", "extra"), PATH_TOOLS)
async def test_every_path_tool_refuses_escapes(
    root: Path, ctx: ToolContext, name: str, extra: dict[str, Any]
) -> None:
    for path in _escapes(root):
        out = await call(ctx, name, path=path, **extra)
        assert out.is_error, (name, path, out.content)
        assert f"path {path!r} is outside the workspace" in out.content
        assert "outside secret" not in out.content
        assert "leak" not in out.content.replace(path, "")
    assert (root.parent / "outside.txt").read_text() == "outside secret\n"
    assert (root.parent / "outdir" / "leak.txt").read_text() == "leak\n"
