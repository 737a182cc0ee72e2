"""What a file tool would change, read for the permission dialog: the same confinement and edit
rule as the tools, and why a change cannot be shown."""

from __future__ import annotations

from pathlib import Path

from engine.tools.proposed_edit import MAX_SHOWN_BYTES, ProposedEdit, UnshownEdit, proposed_edit


def test_write_file_creates_or_replaces(tmp_path: Path) -> None:
    assert proposed_edit(tmp_path, "write_file", {"path": "new.txt", "content": "a\n"}) == (
        ProposedEdit("new.txt", None, "a\n")
    )
    (tmp_path / "old.txt").write_text("before\n")
    assert proposed_edit(tmp_path, "write_file", {"path": "./old.txt", "content": "after\n"}) == (
        ProposedEdit("old.txt", "before\n", "after\n")
    )


def test_edit_file_applies_the_tools_rule(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\ntwo\ntwo\nthree\n")
    edit = proposed_edit(tmp_path, "edit_file", {"path": "f.txt", "old": "one\n", "new": "1\n"})
    assert edit == ProposedEdit("f.txt", "one\ntwo\ntwo\nthree\n", "1\ntwo\ntwo\nthree\n")
    twice = proposed_edit(tmp_path, "edit_file", {"path": "f.txt", "old": "two", "new": "2"})
    assert isinstance(twice, UnshownEdit)
    assert twice.reason.startswith("the edit would fail: old text occurs 2 times")
    missing = proposed_edit(tmp_path, "edit_file", {"path": "f.txt", "old": "four", "new": "4"})
    assert isinstance(missing, UnshownEdit)
    assert "old text not found" in missing.reason
    absent = proposed_edit(tmp_path, "edit_file", {"path": "nope.txt", "old": "x", "new": "y"})
    assert absent == UnshownEdit("nope.txt", "the edit would fail: file 'nope.txt' not found")


def test_what_cannot_be_shown_says_why(tmp_path: Path) -> None:
    outside = proposed_edit(tmp_path, "write_file", {"path": "../x", "content": ""})
    assert isinstance(outside, UnshownEdit)
    assert "outside the workspace" in outside.reason
    (tmp_path / "big.txt").write_text("x" * (MAX_SHOWN_BYTES + 1))
    big = proposed_edit(tmp_path, "write_file", {"path": "big.txt", "content": ""})
    assert isinstance(big, UnshownEdit)
    assert "too large to show as a diff; write_file replaces it whole" in big.reason
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    binary = proposed_edit(tmp_path, "write_file", {"path": "blob.bin", "content": "t"})
    assert isinstance(binary, UnshownEdit)
    assert "binary" in binary.reason


def test_other_tools_and_odd_arguments_have_no_edit(tmp_path: Path) -> None:
    assert proposed_edit(tmp_path, "run_shell", {"command": "ls"}) is None
    assert proposed_edit(tmp_path, "write_file", {"path": 3, "content": ""}) is None
    assert proposed_edit(tmp_path, "edit_file", {"path": "f", "old": "x"}) is None
