"""Anthropic's prompt cache as its documentation describes it, to judge where a request's
`cache_control` breakpoints go by what a session would be billed.

The request is a list of blocks in cache order (tools, system, message blocks). A breakpoint
writes the prefix up to its block; it reads the longest prefix written before whose end lies at
most `LOOKBACK` - 1 blocks before it. A prefix below `min_tokens` is neither written nor read.
Tokens are counted at four characters a token, the same for every request, which is all a share
needs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from engine.events import Usage
from engine.gateway.cache_breakpoints import LOOKBACK


def _blocks(body: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """Each block of the request in cache order, and whether it carries a breakpoint; the
    `cache_control` itself is not part of what is cached."""
    found: list[tuple[dict[str, Any], bool]] = []
    for tool in body.get("tools", []):
        found.append(
            ({k: v for k, v in tool.items() if k != "cache_control"}, "cache_control" in tool)
        )
    system = body.get("system")
    if isinstance(system, str):
        found.append(({"type": "text", "text": system}, False))
    elif isinstance(system, list):
        for block in system:
            found.append(
                ({k: v for k, v in block.items() if k != "cache_control"}, "cache_control" in block)
            )
    for message in body["messages"]:
        for block in message["content"]:
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            found.append(({"role": message["role"], **plain}, "cache_control" in block))
    return found


@dataclass
class PromptCache:
    min_tokens: int = 1024
    written: set[str] = field(default_factory=set)

    def bill(self, body: dict[str, Any]) -> Usage:
        """What the request is billed as: read, written, and plain input tokens."""
        blocks = _blocks(body)
        digests: list[str] = []
        tokens: list[int] = []
        running = hashlib.sha256()
        total = 0
        for block, _ in blocks:
            running.update(json.dumps(block, sort_keys=True).encode())
            digests.append(running.copy().hexdigest())
            total += -(-len(json.dumps(block)) // 4)
            tokens.append(total)
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        read = 0
        for mark in marks:
            for end in range(mark, max(mark - LOOKBACK, -1), -1):
                if digests[end] in self.written and tokens[end] >= self.min_tokens:
                    read = max(read, tokens[end])
                    break
        last = max((tokens[m] for m in marks if tokens[m] >= self.min_tokens), default=0)
        for mark in marks:
            if tokens[mark] >= self.min_tokens:
                self.written.add(digests[mark])
        write = max(last - read, 0)
        return Usage(
            input_tokens=total - read - write, cache_read_tokens=read, cache_write_tokens=write
        )
