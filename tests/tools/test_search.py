"""search: regex over text files, bounded, skipping binaries and tool directories, labelled."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from engine.privacy import PrivacyClass
from engine.tools import Search, ToolContext, default_registry
from engine.tools.builtins.search import SearchArgs


async def test_search_finds_lines_with_their_place(ctx: ToolContext) -> None:
    out = await default_registry().call("search", {"pattern": r"t\w+e"}, ctx)
    assert not out.is_error
    assert out.content == "hello.txt:3: three"
    assert out.label is not None
    assert out.label.cls == PrivacyClass.internal
    assert out.label.parents == frozenset({"hello.txt"})


async def test_search_in_a_subdirectory_or_a_file(ctx: ToolContext) -> None:
    registry = default_registry()
    sub = await registry.call("search", {"pattern": "return", "path": "src"}, ctx)
    assert sub.content == "src/main.py:2:     return 42"
    one = await registry.call("search", {"pattern": "f", "path": "hello.txt"}, ctx)
    assert one.content.splitlines() == ["hello.txt:4: four", "hello.txt:5: five"]


async def test_search_without_matches_is_not_an_error(ctx: ToolContext) -> None:
    out = await default_registry().call("search", {"pattern": "zebra"}, ctx)
    assert not out.is_error
    assert "no matches for 'zebra'" in out.content


async def test_invalid_regex_is_a_readable_error(ctx: ToolContext) -> None:
    out = await default_registry().call("search", {"pattern": "(unclosed"}, ctx)
    assert out.is_error
    assert "invalid regular expression '(unclosed'" in out.content


async def test_match_inside_a_secret_file_is_restricted(ctx: ToolContext) -> None:
    out = await default_registry().call("search", {"pattern": "API_KEY"}, ctx)
    assert out.content == ".env:1: API_KEY=sk-secret"
    assert out.label is not None
    assert out.label.cls == PrivacyClass.restricted
    assert out.label.parents == frozenset({".env"})


async def test_search_skips_binary_and_tool_directories(root: Path, ctx: ToolContext) -> None:
    for skipped in (".git", ".venv", "node_modules"):
        (root / skipped).mkdir()
        (root / skipped / "hit.txt").write_text("needle\n")
    (root / "src" / "data.bin").write_bytes(b"needle\x00\x00")
    (root / "src" / "found.txt").write_text("a needle here\n")
    out = await default_registry().call("search", {"pattern": "needle"}, ctx)
    assert out.content == "src/found.txt:1: a needle here"
    named = await default_registry().call("search", {"pattern": "x", "path": "blob.bin"}, ctx)
    assert named.content == "no matches for 'x' in 'blob.bin'\n[files skipped: 1 binary]"


async def test_search_skips_files_linked_from_outside(root: Path, ctx: ToolContext) -> None:
    (root / "link.txt").symlink_to(root.parent / "outside.txt")
    (root / "linkdir").symlink_to(root.parent / "outdir")
    out = await default_registry().call("search", {"pattern": "secret|leak"}, ctx)
    assert "outside secret" not in out.content
    assert "leak" not in out.content
    assert "1 linked from outside the workspace" in out.content


async def test_matches_and_long_lines_are_bounded(root: Path, ctx: ToolContext) -> None:
    (root / "many.txt").write_text("hit\n" * 50 + "hit " + "y" * 1000 + "\n")
    tool = Search(max_matches=10, max_line_chars=20)
    out = await tool.run(SearchArgs(pattern="hit", path="many.txt"), ctx)
    lines = out.content.splitlines()
    assert len(lines) == 11
    assert lines[-1] == "[stopped after 10 matches; narrow the pattern or the path]"
    long = await Search(max_line_chars=20).run(SearchArgs(pattern="y", path="many.txt"), ctx)
    assert long.content == "many.txt:51: hit " + "y" * 16 + " [line truncated]"


async def test_search_output_is_truncated_to_max_output(root: Path, ctx: ToolContext) -> None:
    (root / "many.txt").write_text("match\n" * 100)
    out = await default_registry().call("search", {"pattern": "match"}, replace(ctx, max_output=50))
    assert "[output truncated: 50 of" in out.content
