"""Where an Anthropic request marks its prompt cache (`cache_control` breakpoints).

Anthropic caches only the prefixes a request marks, in its wire order: tools, then system, then
messages. A breakpoint writes the prefix up to its block (at 1.25x the input price) and reads the
longest prefix cached before it, looking back about `LOOKBACK` blocks for one; a request may have
`MAX_BREAKPOINTS`; a prefix below the model's minimum is never cached. So the marks go where the
next request will be the same:

1. the floor: the end of the system text (behind the tools), else the last tool;
2. the tail: the last block of the request, which the next step's request extends;
3. a bridge: the end of the previous request (the message before the last reply), when the tail
   is too far from it for the look-back to find what that request wrote.

A mark never goes on a thinking block (the API refuses it) nor on an empty text block, and none on
a prefix shorter than `min_tokens` (estimated at `CHARS_PER_TOKEN`, which over-counts tokens, so a
prefix near the minimum is marked rather than missed: the API caches nothing below it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from engine.context.budget import CHARS_PER_TOKEN

MAX_BREAKPOINTS = 4
LOOKBACK = 20
"""Blocks before a breakpoint the API checks for a cached prefix."""
DEFAULT_MIN_TOKENS = 1024
"""The smallest minimum cacheable prefix of Claude models; a larger one is a model entry's
`cache_min_tokens`."""
EPHEMERAL = {"type": "ephemeral"}
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


@dataclass(frozen=True, slots=True)
class _Block:
    """A block a breakpoint may mark: where it is in the body, its position in the wire order
    of message blocks, and the characters of the request up to and including it."""

    where: tuple[str, int, int]  # ("tools", i, 0) | ("system", 0, 0) | ("messages", m, b)
    position: int
    chars: int


def place_breakpoints(body: dict[str, Any], *, min_tokens: int = DEFAULT_MIN_TOKENS) -> None:
    """Mark `body` (a Messages API request built for this call: it is changed in place) with the
    floor, tail and bridge breakpoints that hold at least `min_tokens` before them."""
    floor, blocks, previous_end = _layout(body)
    marks: list[_Block] = []
    if floor is not None:
        marks.append(floor)
    if blocks:
        tail = blocks[-1]
        bridge = previous_end
        if bridge is not None and tail.position - bridge.position >= LOOKBACK:
            marks.append(bridge)
        marks.append(tail)
    kept = [m for m in marks if m.chars // CHARS_PER_TOKEN >= min_tokens]
    for mark in kept[:MAX_BREAKPOINTS]:
        _mark(body, mark.where)


def _layout(body: dict[str, Any]) -> tuple[_Block | None, list[_Block], _Block | None]:
    """The floor's block, the markable message blocks in order, and the last markable block
    before the last assistant message (where the previous request ended)."""
    chars = 0
    floor: _Block | None = None
    tools = body.get("tools") or []
    for index, tool in enumerate(tools):
        chars += _size(tool)
        floor = _Block(("tools", index, 0), -1, chars)
    system = body.get("system")
    if isinstance(system, str) and system:
        chars += len(system)
        floor = _Block(("system", 0, 0), -1, chars)
    blocks: list[_Block] = []
    previous_end: _Block | None = None
    position = 0
    for m, message in enumerate(body.get("messages") or []):
        if message.get("role") == "assistant" and blocks:
            previous_end = blocks[-1]
        for b, block in enumerate(message.get("content") or []):
            chars += _size(block)
            position += 1
            if _markable(block):
                blocks.append(_Block(("messages", m, b), position, chars))
    return floor, blocks, previous_end


def _markable(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    return kind not in _UNMARKABLE and not (kind == "text" and not block.get("text"))


def _size(part: dict[str, Any]) -> int:
    return len(json.dumps(part, ensure_ascii=False, separators=(",", ":")))


def _mark(body: dict[str, Any], where: tuple[str, int, int]) -> None:
    match where:
        case ("system", _, _):
            body["system"] = [{"type": "text", "text": body["system"], "cache_control": EPHEMERAL}]
        case ("tools", index, _):
            body["tools"][index] = {**body["tools"][index], "cache_control": EPHEMERAL}
        case ("messages", m, b):
            content = body["messages"][m]["content"]
            content[b] = {**content[b], "cache_control": EPHEMERAL}
        case _:
            raise AssertionError(f"no such place in a request: {where}")
