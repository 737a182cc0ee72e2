"""notice: one authoritative message, shown once; it takes only itself when collected."""

from __future__ import annotations

from typing import Any, Self

from engine.context.area import Area, AreaLifeState
from engine.message import Message, Role, Source

NOTICE_SOURCE = Source("area", "notice")


class NoticeArea(Area):
    """One-shot and yielded: renders its text, retires, promotes nothing."""

    kind = "notice"

    def __init__(self, text: str, source: Source = NOTICE_SOURCE) -> None:
        if not isinstance(text, str):
            raise TypeError(f"notice text must be str, not {type(text).__name__}")
        self.text = text
        self.source = source
        self._rendered = False

    @property
    def name(self) -> str:
        return self.text.splitlines()[0][:60] if self.text else ""

    @property
    def life_state(self) -> AreaLifeState:
        return AreaLifeState.retired if self._rendered else AreaLifeState.retain

    def render(self) -> list[Message]:
        if self._rendered:
            return []
        self._rendered = True
        return [Message(Role.user, self.text, self.source)]

    def snapshot(self) -> dict[str, Any]:
        return {"text": self.text, "source": str(self.source), "rendered": self._rendered}

    @classmethod
    def restore(cls, state: dict[str, Any]) -> Self:
        area = cls(state["text"], Source.parse(state.get("source", str(NOTICE_SOURCE))))
        area._rendered = bool(state.get("rendered", False))
        return area
