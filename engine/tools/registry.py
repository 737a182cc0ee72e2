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
    """Tools by name, in registration order; tools may come and go (e.g. `subtask_done`).

    A tool is **configured** (the built-ins, configured MCP servers) or **transient** (added for a
    while at run time: `subtask_done`, servers an ACP client passes). The model is offered every
    tool; the stable floor's environment block names only the configured ones, so it stays
    byte-stable while tools come and go (context-orchestration, stable floor).
    """

    def __init__(self, tools: Iterable[Tool[Any]] = ()) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._transient: set[str] = set()
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool[Any], *, transient: bool = False) -> None:
        """Add a tool (`transient`: added for a while at run time, not part of the configured
        set); raises `ValueError` if one with its name is already registered."""
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        if transient:
            self._transient.add(tool.name)

    def unregister(self, name: str) -> Tool[Any]:
        """Remove and return a tool; raises `KeyError` naming it if it is not registered."""
        try:
            tool = self._tools.pop(name)
        except KeyError:
            raise KeyError(f"no tool named {name!r} is registered") from None
        self._transient.discard(name)
        return tool

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def configured_names(self) -> list[str]:
        """The names of the tools not registered as transient, in registration order."""
        return [name for name in self._tools if name not in self._transient]

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
