"""subtask: an exclusive operation over several model turns whose chatter is reclaimed at the end.

While active, the loop offers the model `subtask_done(result)` (`SUBTASK_DONE_TOOL`); calling it
runs `complete(result)`: the area yields, retires and promotes "Subtask GOAL: result", so the next
render reclaims everything appended while it held the cursor and keeps that one line.
"""

from __future__ import annotations

from typing import Any, Self

from engine.context.area import Area, AreaFlowState, AreaLifeState
from engine.gateway.base import ToolSpec
from engine.message import Message, Role, Source

SUBTASK_SOURCE = Source("area", "subtask")
SUBTASK_DONE = "subtask_done"
SUBTASK_DONE_TOOL = ToolSpec(
    name=SUBTASK_DONE,
    description="Finish the active subtask and report its result in one or two sentences.",
    schema={
        "type": "object",
        "properties": {"result": {"type": "string", "description": "What the subtask found."}},
        "required": ["result"],
    },
)


class SubtaskArea(Area):
    """Exclusive while the model works the goal; renders the goal once, then nothing."""

    kind = "subtask"
    tool_name = SUBTASK_DONE
    tool = SUBTASK_DONE_TOOL

    def __init__(self, goal: str) -> None:
        if not isinstance(goal, str) or not goal.strip():
            raise ValueError("a subtask needs a non-empty goal")
        self.goal = goal.strip()
        self.result: str | None = None
        self._rendered = False

    @property
    def name(self) -> str:
        return self.goal[:60]

    @property
    def active(self) -> bool:
        """True until completed: the loop offers `subtask_done` while this holds."""
        return self.result is None

    @property
    def life_state(self) -> AreaLifeState:
        return AreaLifeState.retain if self.active else AreaLifeState.retired

    @property
    def flow_state(self) -> AreaFlowState:
        return AreaFlowState.exclusive if self.active else AreaFlowState.yielded

    def complete(self, result: str) -> None:
        """The model called `subtask_done(result)`: yield, retire, promote the result."""
        if not self.active:
            raise RuntimeError(f"subtask {self.goal!r} is already complete")
        self.result = result

    def render(self) -> list[Message]:
        if self._rendered:
            return []
        self._rendered = True
        text = (
            f"Subtask: {self.goal}\n"
            f"Work on this sub-goal now. When it is done, call {SUBTASK_DONE}(result) "
            "with a short result; the work in between will then be dropped from the context."
        )
        return [Message(Role.user, text, SUBTASK_SOURCE)]

    def promote(self) -> tuple[Message, ...]:
        if self.result is None:
            return ()
        return (Message(Role.user, f"Subtask {self.goal}: {self.result}", SUBTASK_SOURCE),)

    def snapshot(self) -> dict[str, Any]:
        return {"goal": self.goal, "result": self.result, "rendered": self._rendered}

    @classmethod
    def restore(cls, state: dict[str, Any]) -> Self:
        area = cls(state["goal"])
        area.result = state.get("result")
        area._rendered = bool(state.get("rendered", False))
        return area
