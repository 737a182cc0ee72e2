"""A change between two texts as a person reads it: unified hunks of lines, each line with its
number in the old text and in the new one.

Pure: lines in, hunks out. A front end draws them (the permission dialog shows what a write or an
edit would change); `difflib` finds the matching blocks.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

CONTEXT_LINES = 3
"""Unchanged lines shown around each change, as `diff -u` shows them."""


class LineKind(StrEnum):
    context = "context"
    added = "added"
    removed = "removed"


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a hunk; `old` and `new` are its 1-based numbers in each text (None on the side
    that does not have it)."""

    kind: LineKind
    text: str
    old: int | None
    new: int | None


@dataclass(frozen=True, slots=True)
class Hunk:
    """A run of changes with their context; starts and counts as `diff -u` writes them (a side
    with no lines starts at the line before the change)."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[DiffLine, ...]

    @property
    def header(self) -> str:
        return f"@@ -{self.old_start},{self.old_count} +{self.new_start},{self.new_count} @@"


def split_lines(text: str) -> list[str]:
    """The lines of a file as an editor numbers them: split at each newline only (a form feed is
    not a line break), the CR of a CRLF ending dropped, no empty line after a final newline."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def first_changed_line(old: Sequence[str], new: Sequence[str]) -> int:
    """The 1-based line of `new` where it first differs from `old` (1 when they are equal)."""
    for number, (a, b) in enumerate(zip(old, new, strict=False), start=1):
        if a != b:
            return number
    return min(len(old), len(new)) + 1 if len(old) != len(new) else 1


def diff_hunks(
    old: Sequence[str], new: Sequence[str], *, context: int = CONTEXT_LINES
) -> list[Hunk]:
    """The hunks that turn `old` into `new`, with `context` unchanged lines around each change;
    no hunk when the lines are equal."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    hunks: list[Hunk] = []
    for group in matcher.get_grouped_opcodes(context):
        lines: list[DiffLine] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [
                    DiffLine(LineKind.context, old[i], i + 1, j + 1)
                    for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                ]
                continue
            if tag in ("replace", "delete"):
                lines += [DiffLine(LineKind.removed, old[i], i + 1, None) for i in range(i1, i2)]
            if tag in ("replace", "insert"):
                lines += [DiffLine(LineKind.added, new[j], None, j + 1) for j in range(j1, j2)]
        first, last = group[0], group[-1]
        old_count, new_count = last[2] - first[1], last[4] - first[3]
        hunks.append(
            Hunk(
                old_start=first[1] + 1 if old_count else first[1],
                old_count=old_count,
                new_start=first[3] + 1 if new_count else first[3],
                new_count=new_count,
                lines=tuple(lines),
            )
        )
    return hunks
