"""Counts as people read them: `1 turn`, `2 turns`, `1 entry`, `3 entries`.

In the engine because what the model reads says counts too (a tool's result, the offline model's
replies); the front ends use the same function for theirs.
"""

from __future__ import annotations


def counted(count: int, noun: str, plural: str = "", *, width: int = 0) -> str:
    """`count noun`, plural unless one (`plural`, else the noun with an `s`). With `width` the
    number is right-aligned in that many columns and a singular noun padded to its plural's
    length, so listed counts line up."""
    many = plural or f"{noun}s"
    if count != 1:
        return f"{count:>{width}} {many}"
    text = f"{count:>{width}} {noun}"
    return text.ljust(width + 1 + len(many)) if width else text
