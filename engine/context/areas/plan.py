"""plan: a checklist the model and the user update; re-rendered whenever it changes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

from engine.context.area import Area, AreaLifeState
from engine.message import Message, Role, Source

PLAN_SOURCE = Source("area", "plan")


@dataclass(frozen=True, slots=True)
class PlanItem:
    """One checklist line of a plan."""

    id: int
    text: str
    done: bool = False


class PlanArea(Area):
    """Yielded; renders the checklist after each change, retires on `close()`."""

    kind = "plan"

    def __init__(self, title: str = "Plan", items: Sequence[str] = ()) -> None:
        self.title = title
        self._items: list[PlanItem] = []
        self._next_id = 1
        self._dirty = True
        self._closed = False
        for text in items:
            self.add(text)

    @property
    def name(self) -> str:
        return self.title

    @property
    def items(self) -> tuple[PlanItem, ...]:
        return tuple(self._items)

    def add(self, text: str) -> int:
        item = PlanItem(self._next_id, text)
        self._next_id += 1
        self._items.append(item)
        self._dirty = True
        return item.id

    def check(self, item_id: int) -> None:
        self._set(item_id, done=True)

    def uncheck(self, item_id: int) -> None:
        self._set(item_id, done=False)

    def remove(self, item_id: int) -> None:
        self._items.remove(self._find(item_id))
        self._dirty = True

    def close(self) -> None:
        """The plan is finished: retire so its renders can be reclaimed."""
        self._closed = True

    def text(self) -> str:
        lines = [f"{self.title}:"]
        lines += [f"- [{'x' if i.done else ' '}] {i.id}. {i.text}" for i in self._items]
        if not self._items:
            lines.append("(no items)")
        return "\n".join(lines)

    @property
    def life_state(self) -> AreaLifeState:
        return AreaLifeState.retired if self._closed else AreaLifeState.retain

    def render(self) -> list[Message]:
        if not self._dirty:
            return []
        self._dirty = False
        return [Message(Role.user, self.text(), PLAN_SOURCE)]

    def snapshot(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "items": [[i.id, i.text, i.done] for i in self._items],
            "next_id": self._next_id,
            "dirty": self._dirty,
            "closed": self._closed,
        }

    @classmethod
    def restore(cls, state: dict[str, Any]) -> Self:
        area = cls(state.get("title", "Plan"))
        area._items = [PlanItem(int(i), str(t), bool(d)) for i, t, d in state.get("items", ())]
        area._next_id = int(state.get("next_id", len(area._items) + 1))
        area._dirty = bool(state.get("dirty", False))
        area._closed = bool(state.get("closed", False))
        return area

    def _find(self, item_id: int) -> PlanItem:
        for item in self._items:
            if item.id == item_id:
                return item
        raise KeyError(f"plan {self.title!r} has no item {item_id}")

    def _set(self, item_id: int, *, done: bool) -> None:
        item = self._find(item_id)
        if item.done != done:
            self._items[self._items.index(item)] = PlanItem(item.id, item.text, done)
            self._dirty = True
