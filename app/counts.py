"""Counts as people read them: `1 turn`, `2 turns`."""

from __future__ import annotations


def counted(count: int, noun: str, *, width: int = 0) -> str:
    """`count noun`, plural unless one. With `width` the number is right-aligned in that many
    columns and a singular noun padded to its plural's length, so listed counts line up."""
    text = f"{count:>{width}} {noun}"
    if count != 1:
        return f"{text}s"
    return f"{text} " if width else text
