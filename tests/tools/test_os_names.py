"""File names that are not UTF-8 (issue 9): tools show them escaped, and take them back.

A name `list_files` or `search` shows must be storable in an event and, passed back to a tool,
reach the same file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from engine.os_text import is_storable
from engine.tools import ToolContext, ToolOutput, default_registry

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX names are bytes")


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolOutput:
    return await default_registry().call(name, arguments, ctx)


def storable(output: ToolOutput) -> bool:
    label = output.label
    texts = [output.content, *(label.subjects | label.parents if label else ())]
    return all(is_storable(text) for text in texts)


@pytest.fixture
def named(root: Path) -> Path:
    """`caf<E9>.txt`, a directory `d<FF>` holding `f.txt`, and `a\\xe9.txt` spelled in ASCII."""
    (root / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"latin one\n")
    (root / os.fsdecode(b"d\xff")).mkdir()
    (root / os.fsdecode(b"d\xff/f.txt")).write_bytes(b"nested\n")
    (root / "a\\xe9.txt").write_text("looks escaped\n")
    return root


async def test_listed_names_are_storable_and_read_back_the_same_file(
    named: Path, ctx: ToolContext
) -> None:
    listing = await call(ctx, "list_files")
    assert storable(listing)
    names = listing.content.splitlines()
    assert "caf\\xe9.txt" in names
    assert "d\\xff/" in names
    assert "a\\\\xe9.txt" in names  # the ASCII look-alike stays distinct
    assert (await call(ctx, "read_file", path="caf\\xe9.txt")).content == "latin one\n"
    assert (await call(ctx, "read_file", path="a\\\\xe9.txt")).content == "looks escaped\n"
    inner = await call(ctx, "list_files", path="d\\xff")
    assert inner.content == "f.txt"
    read = await call(ctx, "read_file", path="d\\xff/f.txt")
    assert read.content == "nested\n"
    assert storable(read)
    assert read.label is not None
    assert read.label.parents == frozenset({"d\\xff/f.txt"})


async def test_a_path_that_exists_only_as_typed_is_taken_as_typed(
    named: Path, ctx: ToolContext
) -> None:
    # no file has the byte 0xE9 here, so the typed backslash is a plain character
    (named / "b\\xe9.txt").write_text("typed\n")
    assert (await call(ctx, "read_file", path="b\\xe9.txt")).content == "typed\n"


async def test_search_reports_escaped_names_that_lead_back(named: Path, ctx: ToolContext) -> None:
    found = await call(ctx, "search", pattern="latin|nested")
    assert storable(found)
    lines = found.content.splitlines()
    assert lines == ["caf\\xe9.txt:1: latin one", "d\\xff/f.txt:1: nested"]
    again = await call(ctx, "search", pattern="nested", path="d\\xff")
    assert again.content == lines[1]


async def test_write_and_edit_reach_the_listed_file(named: Path, ctx: ToolContext) -> None:
    edited = await call(ctx, "edit_file", path="caf\\xe9.txt", old="one", new="two")
    assert not edited.is_error
    assert storable(edited)
    assert "caf\\xe9.txt" in edited.content
    assert (await call(ctx, "write_file", path="d\\xff/g.txt", content="new\n")).is_error is False
    assert (named / os.fsdecode(b"caf\xe9.txt")).read_bytes() == b"latin two\n"
    assert (named / os.fsdecode(b"d\xff/g.txt")).read_bytes() == b"new\n"


async def test_an_escaped_path_still_may_not_leave_the_workspace(
    named: Path, ctx: ToolContext
) -> None:
    refused = await call(ctx, "read_file", path="../caf\\xe9.txt")
    assert refused.is_error
    assert "'../caf\\\\xe9.txt' is outside the workspace" in refused.content
    assert storable(refused)
