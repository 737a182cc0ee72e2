"""A change of a file's text as the lines a person reads: hunks of context, removed and added
lines, each with its line numbers in the file before and after.

Pure (no widgets): the permission dialog draws it, and anything else that shows a change can."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from engine.counts import counted

CONTEXT_LINES = 3
"""Unchanged lines shown around each change, as `diff -u` does."""

LineKind = Literal["context", "removed", "added", "gap"]


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of the diff: `old` and `new` are its 1-based numbers in the file before and
    after (None where it is not in that version); a `gap` says how many unchanged lines are left
    out there."""

    kind: LineKind
    text: str
    old: int | None = None
    new: int | None = None


@dataclass(frozen=True, slots=True)
class FileDiff:
    lines: tuple[DiffLine, ...]
    added: int
    removed: int


def file_diff(old: str | None, new: str, context: int = CONTEXT_LINES) -> FileDiff:
    """The lines of `old` (None: no file yet) against those of `new`, in hunks with `context`
    unchanged lines around each change."""
    before = (old or "").splitlines()
    after = new.splitlines()
    lines: list[DiffLine] = []
    added = removed = 0
    matcher = SequenceMatcher(None, before, after, autojunk=False)
    shown_to = 0  # the lines of `old` shown so far end here
    for group in matcher.get_grouped_opcodes(context):
        if group[0][1] > shown_to:
            lines.append(_gap(group[0][1] - shown_to))
        shown_to = group[-1][2]
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [
                    DiffLine("context", before[i], i + 1, j1 + k + 1)
                    for k, i in enumerate(range(i1, i2))
                ]
                continue
            if tag in ("replace", "delete"):
                lines += [DiffLine("removed", before[i], old=i + 1) for i in range(i1, i2)]
                removed += i2 - i1
            if tag in ("replace", "insert"):
                lines += [DiffLine("added", after[j], new=j + 1) for j in range(j1, j2)]
                added += j2 - j1
    if lines and shown_to < len(before):
        lines.append(_gap(len(before) - shown_to))
    return FileDiff(tuple(lines), added, removed)


def _gap(unchanged: int) -> DiffLine:
    return DiffLine("gap", f"⋯ {counted(unchanged, 'unchanged line')}")
