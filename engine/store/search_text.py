"""What the search index holds of an event: its kind and its text, read from the stored row.

One definition for both stores and for both directions: SQLite's index without content is told
the very text again to delete a row (before 3.43), so what is indexed must follow from the row
alone. Only final messages are indexed — the user's words, injected context, the assistant's
replies, tool calls and results — never stream deltas (they are not stored).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

INDEXED_TYPES = ("user/message", "assistant/message", "tool/call", "tool/result")
"""The event types whose text is searchable."""
MAX_INDEXED_CHARS = 100_000
"""Of a longer text (a whole file read back) only the start is indexed: the index's cost stays
bounded per event, and PostgreSQL's tsvector has a size limit of its own."""


@dataclass(frozen=True, slots=True)
class IndexedText:
    kind: str  # user, injected, assistant, tool
    text: str


def indexed_text(kind: str, data: str | dict[str, Any]) -> IndexedText | None:
    """The searchable text of a stored row of type `kind` (its JSON `data`), or None."""
    if kind not in INDEXED_TYPES:
        return None
    payload: dict[str, Any] = json.loads(data) if isinstance(data, str) else data
    match kind:
        case "user/message":
            source = str(payload.get("source", "user"))
            found = IndexedText("user" if source == "user" else "injected", payload["content"])
        case "assistant/message":
            found = IndexedText("assistant", payload.get("content", ""))
        case "tool/result":
            found = IndexedText("tool", payload.get("content", ""))
        case _:  # tool/call: the tool's name and the strings it was given
            strings = " ".join(_strings(payload.get("arguments", {})))
            found = IndexedText("tool", f"{payload.get('name', '')} {strings}".strip())
    if not found.text.strip():
        return None
    if len(found.text) > MAX_INDEXED_CHARS:
        return IndexedText(found.kind, found.text[:MAX_INDEXED_CHARS])
    return found


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


Doc = tuple[int, str]  # the row's key in the index (SQLite: the event's rowid), its text


def docs_of(rows: Sequence[Sequence[Any]]) -> list[Doc]:
    """(key, type, data) rows to the documents the index holds for them."""
    docs: list[Doc] = []
    for key, kind, data in rows:
        found = indexed_text(kind, data)
        if found is not None:
            docs.append((key, found.text))
    return docs
