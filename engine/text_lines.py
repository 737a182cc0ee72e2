"""Short forms of long text for one-line views: a prompt in a list, a tool's arguments on its
card, a queued message in the side panel."""

from __future__ import annotations


def first_line(text: str, width: int, *, more: bool = False) -> str:
    """The first line that is not blank, stripped and cut to `width` with an ellipsis; with
    `more`, an uncut line gets ` …` when other text follows it."""
    lines = (line.strip() for line in text.splitlines())
    line = next((line for line in lines if line), "")
    if len(line) > width:
        return line[: width - 1] + "…"
    if more and any(lines):
        return f"{line} …"
    return line
