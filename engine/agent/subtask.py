"""`subtask_done(result)`: the tool the model has while a subtask area is active."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field

from engine.context.areas import SubtaskArea
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.tools import Tool, ToolContext, ToolKind, ToolOutput

_INTERNAL = PrivatizationLabel(cls=PrivacyClass.internal)


class SubtaskDoneArgs(BaseModel):
    result: str = Field(description="What the subtask achieved, in a sentence or two.")


class SubtaskDoneTool(Tool[SubtaskDoneArgs]):
    """Completes the active subtask: it yields, retires and promotes "Subtask GOAL: result"."""

    name = SubtaskArea.tool_name
    description = (
        "Call this when the current subtask's goal is reached. Its working messages are then "
        "replaced by one line with the goal and your result."
    )
    args_model = SubtaskDoneArgs
    kind = ToolKind.other

    def __init__(self, area: SubtaskArea, on_done: Callable[[], None]) -> None:
        self._area = area
        self._on_done = on_done

    async def run(self, args: SubtaskDoneArgs, ctx: ToolContext) -> ToolOutput:
        if not self._area.active:
            return ToolOutput.error("There is no active subtask.")
        self._area.complete(args.result)
        self._on_done()
        # The result is the model's own words, already labelled on its assistant message; the
        # tool reads nothing, so its output adds nothing above internal.
        return ToolOutput(f"Subtask complete: {args.result}", label=_INTERNAL)
