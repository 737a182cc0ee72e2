"""The tool registry: the tools the model may call, and the one place a call is made safely.

`call` never raises for anything the model did wrong or a tool did badly: an unknown name, bad
arguments or an exception inside a tool all become error outputs the model can read and react to.
Only cancellation propagates, so the loop can cancel a turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from engine.gateway.base import ToolSpec
from engine.tools.builtins import builtin_tools
from engine.tools.tool import Tool, ToolContext, ToolOutput

MAX_SHOWN_INPUT = 80
"""How much of a rejected argument value is quoted back to the model."""


class ToolRegistry:
    """Tools by name, in registration order; tools may come and go (e.g. `subtask_done`)."""

    def __init__(self, tools: Iterable[Tool[Any]] = ()) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool[Any]) -> None:
        """Add a tool; raises `ValueError` if one with its name is already registered."""
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def unregister(self, name: str) -> Tool[Any]:
        """Remove and return a tool; raises `KeyError` naming it if it is not registered."""
        try:
            return self._tools.pop(name)
        except KeyError:
            raise KeyError(f"no tool named {name!r} is registered") from None

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """What the model is told it may call, in registration order."""
        return [tool.spec() for tool in self._tools.values()]

    async def call(self, name: str, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        """Validate and run one call; every failure but cancellation is an error output."""
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            return ToolOutput.error(f"unknown tool {name!r}; available tools: {available}")
        try:
            args = tool.args_model.model_validate(arguments)
        except ValidationError as invalid:
            return ToolOutput.error(describe_invalid_arguments(tool, invalid))
        try:
            return await tool.run(args, ctx)
        except Exception as error:  # CancelledError is a BaseException and propagates
            return ToolOutput.error(f"{name} failed: {type(error).__name__}: {error}")


def describe_invalid_arguments(tool: Tool[Any], invalid: ValidationError) -> str:
    """One line per problem, then the parameters the tool takes, so the model can retry right."""
    problems: list[str] = []
    for error in invalid.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        if error["type"] == "missing":
            problems.append(f"{where}: required but missing")
        elif error["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown argument")
        else:
            shown = repr(error.get("input"))
            if len(shown) > MAX_SHOWN_INPUT:
                shown = shown[:MAX_SHOWN_INPUT] + "..."
            problems.append(f"{where}: {error['msg']} (got {shown})")
    schema = tool.args_model.model_json_schema()
    required = set(schema.get("required", ()))
    parameters = ", ".join(
        f"{param}{' (required)' if param in required else ''}"
        for param in schema.get("properties", {})
    )
    return (
        f"invalid arguments for {tool.name}: "
        + "; ".join(problems)
        + f". Parameters: {parameters or 'none'}."
    )


def default_registry() -> ToolRegistry:
    """A registry holding the six built-in tools."""
    return ToolRegistry(builtin_tools())
