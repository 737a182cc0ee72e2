"""Unified hunks with line numbers: the same hunks `diff -u` writes, each line numbered in the old
text and the new one."""

from __future__ import annotations

import difflib

import pytest

from engine.line_diff import DiffLine, Hunk, LineKind, diff_hunks, split_lines

CONTEXT, ADDED, REMOVED = LineKind.context, LineKind.added, LineKind.removed


def unified(hunks: list[Hunk]) -> list[str]:
    """The hunks written as `diff -u` writes them (after its two file header lines)."""
    out: list[str] = []
    for hunk in hunks:
        out.append(hunk.header)
        sign = {CONTEXT: " ", ADDED: "+", REMOVED: "-"}
        out += [sign[line.kind] + line.text for line in hunk.lines]
    return out


def difflib_unified(old: list[str], new: list[str], context: int = 3) -> list[str]:
    lines = list(difflib.unified_diff(old, new, n=context, lineterm=""))[2:]
    # difflib leaves out a count of 1 (`@@ -3 +3,2 @@`); the hunks always write it
    return [_with_counts(line) if line.startswith("@@") else line for line in lines]


def _with_counts(header: str) -> str:
    _, old, new, _ = header.split(" ")
    return f"@@ {old if ',' in old else old + ',1'} {new if ',' in new else new + ',1'} @@"


TEN = [f"line {n}" for n in range(1, 11)]
CASES = {
    "one line changed": (TEN, [*TEN[:4], "line five", *TEN[5:]]),
    "lines added at the end": (TEN, [*TEN, "eleven", "twelve"]),
    "lines removed at the start": (TEN, TEN[2:]),
    "two changes far apart": (
        [f"l{n}" for n in range(1, 31)],
        ["L1", *[f"l{n}" for n in range(2, 30)], "L30"],
    ),
    "two changes close together": (TEN, [*TEN[:2], "x", *TEN[3:6], "y", *TEN[7:]]),
    "a new file": ([], ["a", "b"]),
    "a file emptied": (["a", "b"], []),
    "an insertion into an empty middle": (["a", "b"], ["a", "new", "b"]),
}


@pytest.mark.parametrize("name", CASES)
def test_the_hunks_are_those_diff_u_writes(name: str) -> None:
    old, new = CASES[name]
    assert unified(diff_hunks(old, new)) == difflib_unified(old, new)


def test_each_line_carries_its_number_in_the_old_and_the_new_text() -> None:
    new = [*TEN[:4], "line five", "inserted", *TEN[5:]]
    [hunk] = diff_hunks(TEN, new)
    assert hunk.lines == (
        DiffLine(CONTEXT, "line 2", 2, 2),
        DiffLine(CONTEXT, "line 3", 3, 3),
        DiffLine(CONTEXT, "line 4", 4, 4),
        DiffLine(REMOVED, "line 5", 5, None),
        DiffLine(ADDED, "line five", None, 5),
        DiffLine(ADDED, "inserted", None, 6),
        DiffLine(CONTEXT, "line 6", 6, 7),
        DiffLine(CONTEXT, "line 7", 7, 8),
        DiffLine(CONTEXT, "line 8", 8, 9),
    )
    assert hunk.header == "@@ -2,7 +2,8 @@"


def test_changes_far_apart_make_separate_hunks_with_their_own_numbers() -> None:
    old = [f"l{n}" for n in range(1, 31)]
    new = ["L1", *old[1:29], "L30"]
    first, second = diff_hunks(old, new)
    assert (first.old_start, first.old_count, first.new_start, first.new_count) == (1, 4, 1, 4)
    assert first.lines[0] == DiffLine(REMOVED, "l1", 1, None)
    assert (second.old_start, second.new_start) == (27, 27)
    assert second.lines[-1] == DiffLine(ADDED, "L30", None, 30)


def test_a_new_file_is_every_line_added() -> None:
    [hunk] = diff_hunks([], ["a", "b", "c"])
    assert hunk.header == "@@ -0,0 +1,3 @@"
    assert [(line.kind, line.old, line.new) for line in hunk.lines] == [
        (ADDED, None, 1),
        (ADDED, None, 2),
        (ADDED, None, 3),
    ]


def test_more_context_joins_hunks_and_none_shows_only_the_changes() -> None:
    old = [f"l{n}" for n in range(1, 21)]
    new = [*old[:2], "x", *old[3:12], "y", *old[13:]]
    assert len(diff_hunks(old, new, context=3)) == 2
    assert len(diff_hunks(old, new, context=5)) == 1
    bare = diff_hunks(old, new, context=0)
    assert [[line.kind for line in h.lines] for h in bare] == [[REMOVED, ADDED]] * 2
    assert unified(bare) == difflib_unified(old, new, context=0)


def test_equal_texts_have_no_hunks() -> None:
    assert diff_hunks(TEN, list(TEN)) == []
    assert diff_hunks([], []) == []


def test_lines_are_split_as_an_editor_numbers_them() -> None:
    assert split_lines("") == []
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("a\r\nb\r\n") == ["a", "b"]
    assert split_lines("a\n\n") == ["a", ""]
    assert split_lines("page\x0cbreak\n") == ["page\x0cbreak"]  # one line, as git counts it
