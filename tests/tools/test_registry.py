"""The registry: specs for the model, and every failure of a call turned into a readable result."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import Field

from engine.tools import (
    Tool,
    ToolArgs,
    ToolContext,
    ToolKind,
    ToolOutput,
    ToolRegistry,
    default_registry,
)


class BoomArgs(ToolArgs):
    title: str = Field(description="A property named title must survive title stripping.")


class Boom(Tool[BoomArgs]):
    name = "boom"
    description = "Always fails."
    args_model = BoomArgs

    async def run(self, args: BoomArgs, ctx: ToolContext) -> ToolOutput:
        raise RuntimeError(f"kaput {args.title}")


class HangArgs(ToolArgs):
    pass


class Hang(Tool[HangArgs]):
    name = "hang"
    description = "Waits until cancelled."
    args_model = HangArgs

    async def run(self, args: HangArgs, ctx: ToolContext) -> ToolOutput:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_default_registry_has_the_six_builtins() -> None:
    registry = default_registry()
    assert registry.names() == [
        "read_file",
        "list_files",
        "search",
        "write_file",
        "edit_file",
        "run_shell",
    ]
    needing = {
        name for name in registry.names() if (tool := registry.get(name)) and tool.needs_permission
    }
    assert needing == {"write_file", "edit_file", "run_shell"}
    kinds = {name: tool.kind for name in registry.names() if (tool := registry.get(name))}
    assert kinds == {
        "read_file": ToolKind.read,
        "list_files": ToolKind.read,
        "search": ToolKind.search,
        "write_file": ToolKind.edit,
        "edit_file": ToolKind.edit,
        "run_shell": ToolKind.execute,
    }


def test_specs_carry_json_schemas() -> None:
    specs = {spec.name: spec for spec in default_registry().specs()}
    read = specs["read_file"].parameters
    assert read["type"] == "object"
    assert read["required"] == ["path"]
    assert set(read["properties"]) == {"path", "start_line", "end_line"}
    assert read["properties"]["path"]["type"] == "string"
    assert read["additionalProperties"] is False
    assert "title" not in read
    assert "title" not in read["properties"]["path"]
    shell = specs["run_shell"].parameters
    assert shell["required"] == ["command"]
    assert specs["edit_file"].parameters["required"] == ["path", "old", "new"]
    assert specs["search"].parameters["required"] == ["pattern"]
    assert all(spec.description for spec in specs.values())
    boom = Boom().spec().parameters
    assert set(boom["properties"]) == {"title"}
    assert "title" not in boom["properties"]["title"]


def test_register_duplicate_and_unregister() -> None:
    registry = default_registry()
    with pytest.raises(ValueError, match="'read_file' is already registered"):
        registry.register(default_registry().get("read_file") or Boom())
    registry.register(Boom())
    assert "boom" in registry
    assert registry.names()[-1] == "boom"
    assert registry.unregister("boom").name == "boom"
    assert "boom" not in registry
    assert registry.get("boom") is None
    with pytest.raises(KeyError, match="boom"):
        registry.unregister("boom")


async def test_unknown_tool_names_the_available_ones(ctx: ToolContext) -> None:
    out = await ToolRegistry([Boom()]).call("frobnicate", {}, ctx)
    assert out.is_error
    assert out.content == "unknown tool 'frobnicate'; available tools: boom"


async def test_bad_arguments_become_a_readable_error(ctx: ToolContext) -> None:
    registry = default_registry()
    out = await registry.call("read_file", {"start_line": "soon", "colour": 1}, ctx)
    assert out.is_error
    assert out.content.startswith("invalid arguments for read_file: ")
    assert "path: required but missing" in out.content
    assert "start_line: Input should be a valid integer" in out.content
    assert "(got 'soon')" in out.content
    assert "colour: unknown argument" in out.content
    assert "Parameters: path (required), start_line, end_line." in out.content


async def test_tool_exception_becomes_an_error_result(ctx: ToolContext) -> None:
    out = await ToolRegistry([Boom()]).call("boom", {"title": "now"}, ctx)
    assert out.is_error
    assert out.content == "boom failed: RuntimeError: kaput now"


async def test_cancellation_propagates(ctx: ToolContext) -> None:
    task = asyncio.create_task(ToolRegistry([Hang()]).call("hang", {}, ctx))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_context_refuses_nonsense_limits(ctx: ToolContext) -> None:
    with pytest.raises(ValueError, match="max_output"):
        ToolContext(root=ctx.root, max_output=0)
    with pytest.raises(ValueError, match="timeouts"):
        ToolContext(root=ctx.root, timeout=0)
    assert ctx.is_secret("config/id_rsa")
    assert ctx.is_secret("aws_credentials.json")
    assert not ctx.is_secret("src/env.py")


def test_a_transient_tool_is_offered_but_not_configured() -> None:
    registry = default_registry()
    configured = registry.names()
    registry.register(Boom(), transient=True)
    assert "boom" in registry
    assert registry.names() == [*configured, "boom"]
    assert [spec.name for spec in registry.specs()][-1] == "boom"  # the model is offered it
    assert registry.configured_names() == configured
    registry.unregister("boom")
    registry.register(Boom())  # registered again without the flag: configured
    assert registry.configured_names() == [*configured, "boom"]
