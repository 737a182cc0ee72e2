"""Where each Context item came from: the orchestrator groups by it, the egress gate joins its labels."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from engine.message import Source
from engine.privacy import PrivatizationLabel


class ItemKind(StrEnum):
    message = "message"  # a user/message event (direct input or injected context)
    assistant = "assistant"  # an assistant/message with its tool calls
    tool_result = "tool_result"  # a tool/result
    area = "area"  # rendered by an Area (area/render)
    promoted = "promoted"  # promoted by a collected Area (gc/collect)
    summary = "summary"  # a compaction summary


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """One Context item's origin. `turn` is None for items appended between turns.

    `owner` is the id of the Area that owns the item: the one that rendered it, or the one that held
    the cursor exclusively when it was appended (docs/spec/context-areas.md, carry-over).
    """

    kind: ItemKind
    seq: int | None = None
    turn: int | None = None
    source: Source | None = None
    label: PrivatizationLabel | None = None
    owner: str | None = None

    def owned_by(self, owner: str | None) -> Provenance:
        return replace(self, owner=owner)
