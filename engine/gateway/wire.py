"""A request as one text, in the order its provider reads it: what prefix stability is measured on.

A prompt cache matches a request's leading content. Anthropic's reads the tools, then the system
text, then the messages; OpenAI and Gemini put the system text first, then the tools, then the
messages. The scripted model has no cache: it takes Anthropic's order, so a session measured on it
is measured as a caching provider would see it. Tools are their definitions as the log records
them (`tool/define`), messages the codec's serialization (merges included), each part compact JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal, assert_never

from engine.gateway.base import Codec, GatewayType, NativeContent

Part = Literal["tools", "system", "messages"]

TOOLS_FIRST: tuple[Part, ...] = ("tools", "system", "messages")
SYSTEM_FIRST: tuple[Part, ...] = ("system", "tools", "messages")


def wire_order(gateway_type: GatewayType) -> tuple[Part, ...]:
    """The order `gateway_type`'s provider reads a request's parts in."""
    match gateway_type:
        case GatewayType.anthropic | GatewayType.scripted:
            return TOOLS_FIRST
        case GatewayType.openai | GatewayType.gemini:
            return SYSTEM_FIRST
        case _:
            assert_never(gateway_type)


def wire_text(
    gateway_type: GatewayType,
    codec: Codec,
    *,
    system: str,
    tools: Sequence[str],
    items: Sequence[NativeContent],
) -> str:
    """The request as one compact JSON object whose keys follow `wire_order`: the messages last,
    so a request that only grew at its tail shares all of the one before but the closing marks."""
    parts: dict[Part, str] = {
        "tools": "[" + ",".join(tools) + "]",
        "system": json.dumps(system, ensure_ascii=False),
        "messages": json.dumps(codec.serialize(items), ensure_ascii=False, separators=(",", ":")),
    }
    return "{" + ",".join(f'"{part}":{parts[part]}' for part in wire_order(gateway_type)) + "}"
