"""A small Context stand-in for orchestrator tests: native items with aligned provenance."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.context.provenance import ItemKind, Provenance
from engine.gateway.base import NativeContent
from engine.message import Source
from engine.privacy import PrivatizationLabel

USER = Source("user")
ROLE_OF: dict[ItemKind, str] = {
    ItemKind.message: "user",
    ItemKind.assistant: "assistant",
    ItemKind.tool_result: "tool",
    ItemKind.area: "user",
    ItemKind.promoted: "user",
    ItemKind.summary: "user",
}


@dataclass(slots=True)
class Session:
    """Appends items the way the agent loop does, each with its provenance and a fresh seq."""

    items: list[NativeContent] = field(default_factory=list)
    provenances: list[Provenance] = field(default_factory=list)
    seq: int = 0

    def add(
        self,
        text: str,
        *,
        kind: ItemKind = ItemKind.message,
        turn: int | None = None,
        source: Source | None = USER,
        owner: str | None = None,
        label: PrivatizationLabel | None = None,
    ) -> int:
        """Append one item; returns its Context index."""
        self.items.append({"role": ROLE_OF[kind], "content": text})
        self.provenances.append(
            Provenance(kind=kind, seq=self.seq, turn=turn, source=source, owner=owner, label=label)
        )
        self.seq += 1
        return len(self.items) - 1

    def turn(self, turn: int, prompt: str = "question", reply: str = "answer") -> list[int]:
        """One plain past turn: the user's prompt and the model's reply."""
        return [
            self.add(prompt, turn=turn),
            self.add(reply, kind=ItemKind.assistant, turn=turn, source=Source("model", "m")),
        ]

    def detach(self, from_index: int) -> None:
        del self.items[from_index:]
        del self.provenances[from_index:]
