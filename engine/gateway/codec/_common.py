"""Shared pieces of the native codecs: argument JSON, copies, and the merge of adjacent items."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

from engine.gateway.base import NativeContent


def arguments_json(arguments: dict[str, Any]) -> str:
    """Tool-call arguments as the compact JSON string OpenAI expects."""
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def parse_arguments(text: str) -> dict[str, Any]:
    """Arguments back from their JSON string; a non-object is kept under `_raw` so nothing is lost."""
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_raw": text}


def copies(items: Sequence[NativeContent]) -> list[dict[str, Any]]:
    """Deep copies, so a request can never bend the Context it was serialized from."""
    return [copy.deepcopy(item) for item in items]


def merge_adjacent(
    items: Sequence[NativeContent],
    *,
    blocks_key: str,
    first: Callable[[dict[str, Any]], bool],
) -> list[dict[str, Any]]:
    """Merge runs of same-role items into one; in a merged run, blocks matching `first` lead.

    Anthropic and Gemini require alternating roles and want tool results (function responses) at
    the front of the user turn that answers the calls; the Context keeps one item per message, so
    the merge happens here only.
    """
    merged: list[dict[str, Any]] = []
    for item in copies(items):
        if merged and merged[-1]["role"] == item["role"]:
            merged[-1][blocks_key].extend(item[blocks_key])
        else:
            merged.append(item)
    for item in merged:
        blocks: list[dict[str, Any]] = item[blocks_key]
        leading = [b for b in blocks if first(b)]
        if leading and len(leading) != len(blocks):
            item[blocks_key] = leading + [b for b in blocks if not first(b)]
    return merged
