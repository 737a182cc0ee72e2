"""Tools from MCP servers, against a real stdio server (`mcp_server_fixture.py`, run with FastMCP).

The tests that only list and call share one server per module (starting one costs about a
second); the lifecycle tests start their own.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from mcp import types as mcp_types

from engine.agent.factory import open_agent
from engine.config import Config, ConfigError, McpServer
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.privacy import PrivacyClass
from engine.store.sqlite.store import SQLiteStore
from engine.tools import ToolContext, ToolKind, ToolRegistry
from engine.tools.mcp import McpToolset
from engine.tools.mcp_client import McpTool, result_text
from engine.tools.mcp_schema import MAX_TOOL_NAME, argument_problems, tool_name
from engine.tools.mcp_server import McpServerError
from tests.agent.conftest import runtime_of

FIXTURE = Path(__file__).with_name("mcp_server_fixture.py")

shared = pytest.mark.asyncio(loop_scope="module")


def fixture_server(*mode: str, name: str = "fixture") -> McpServer:
    return McpServer(name=name, command=sys.executable, args=[str(FIXTURE), *mode])


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def toolset() -> AsyncIterator[McpToolset]:
    tools = await McpToolset.connect([fixture_server("--slow")])
    yield tools
    await tools.aclose()


@pytest.fixture
def registry(toolset: McpToolset) -> ToolRegistry:
    return toolset.register_into(ToolRegistry())


# --- listing -------------------------------------------------------------------------------------


@shared
async def test_remote_tools_join_the_registry_as_server__tool(registry: ToolRegistry) -> None:
    assert registry.names() == ["fixture__add", "fixture__fail", "fixture__nap"]
    add = registry.get("fixture__add")
    assert add is not None
    assert add.kind is ToolKind.other
    assert add.needs_permission
    spec = add.spec()
    assert spec.name == "fixture__add"
    assert spec.description == "Add two integers."
    assert spec.parameters["type"] == "object"
    assert spec.parameters["required"] == ["a", "b"]
    assert spec.parameters["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}


# --- calling -------------------------------------------------------------------------------------


@shared
async def test_a_call_returns_the_text_labelled_internal(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    output = await registry.call("fixture__add", {"a": 2, "b": 40}, ctx)
    assert (output.content, output.is_error) == ("42", False)
    assert output.label is not None
    assert output.label.cls is PrivacyClass.internal
    assert output.label.parents == frozenset({"mcp:fixture"})


@shared
async def test_an_error_result_is_an_error_output(registry: ToolRegistry, ctx: ToolContext) -> None:
    output = await registry.call("fixture__fail", {}, ctx)
    assert output.is_error
    assert "deliberate failure" in output.content


@shared
async def test_bad_arguments_are_refused_before_the_server_is_asked(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    output = await registry.call("fixture__add", {"a": "two", "c": 1}, ctx)
    assert output.is_error
    assert output.content == (
        "invalid arguments for fixture__add: b: required but missing; "
        "a: expected integer (got 'two'). Parameters: a (required), b (required)."
    )


@shared
async def test_a_slow_call_times_out_with_the_context_timeout(
    registry: ToolRegistry, root: Path
) -> None:
    ctx = ToolContext(root=root, timeout=0.3)
    output = await registry.call("fixture__nap", {"seconds": 5}, ctx)
    assert output.is_error
    assert output.content == "fixture__nap: MCP server 'fixture' did not answer within 0.3 s"
    # the connection survives a timed-out call
    assert (await registry.call("fixture__add", {"a": 1, "b": 1}, ctx)).content == "2"


@shared
async def test_long_output_is_bounded(registry: ToolRegistry, root: Path) -> None:
    ctx = ToolContext(root=root, max_output=5)
    output = await registry.call("fixture__nap", {"seconds": 0}, ctx)
    assert output.content == "slept\n[output truncated: 5 of 9 characters shown]"


# --- lifecycle -----------------------------------------------------------------------------------


async def test_a_missing_command_is_a_clear_error() -> None:
    server = McpServer(name="ghost", command="/nonexistent/trellis-mcp-server", args=["--x"])
    with pytest.raises(McpServerError) as caught:
        await McpToolset.connect([server])
    assert caught.value.server == "ghost"
    assert str(caught.value) == (
        "MCP server 'ghost': cannot start '/nonexistent/trellis-mcp-server --x': command not found"
    )


async def test_a_server_that_exits_at_once_is_reported_with_its_stderr() -> None:
    with pytest.raises(McpServerError) as caught:
        await McpToolset.connect([fixture_server("--crash", name="crashy")])
    message = str(caught.value)
    assert message.startswith("MCP server 'crashy': ")
    assert "exited before answering" in message
    assert "fixture: refusing to start (crash mode)" in caught.value.stderr


async def test_a_silent_server_times_out_at_startup() -> None:
    # reads its stdin and never answers; exits when stdin closes
    server = McpServer(name="mute", command="sh", args=["-c", "cat > /dev/null"])
    with pytest.raises(McpServerError) as caught:
        await McpToolset.connect([server], startup_timeout=0.3)
    assert str(caught.value) == "MCP server 'mute': no answer within 0.3 s of starting"


async def test_one_failing_server_closes_the_others() -> None:
    good = fixture_server()
    bad = McpServer(name="ghost", command="/nonexistent/trellis-mcp-server")
    with pytest.raises(McpServerError, match="'ghost'"):
        await McpToolset.connect([good, bad])


async def test_closing_stops_the_server(ctx: ToolContext) -> None:
    toolset = await McpToolset.connect([fixture_server(), fixture_server(name="other")])
    registry = toolset.register_into(ToolRegistry())
    assert registry.names() == ["fixture__add", "fixture__fail", "other__add", "other__fail"]
    await toolset.aclose()
    assert not any(connection.running for connection in toolset.connections)
    output = await registry.call("other__add", {"a": 1, "b": 2}, ctx)
    assert output.is_error
    assert output.content == "other__add: MCP server 'other': the server is not running"
    await toolset.aclose()  # twice is fine


async def test_no_servers_is_an_empty_toolset() -> None:
    toolset = await McpToolset.connect([])
    assert toolset.tools == ()
    await toolset.aclose()


# --- the agent ---------------------------------------------------------------------------------


async def test_open_agent_connects_the_configured_servers(tmp_path: Path) -> None:
    agent = await open_agent(config=Config(mcp_servers=[fixture_server()]), cwd=tmp_path)
    tool = runtime_of(agent).tools.get("fixture__add")
    assert isinstance(tool, McpTool)
    try:
        assert "fixture__add" in [spec.name for spec in runtime_of(agent).tool_specs()]
        assert "read_file" in runtime_of(agent).tools
    finally:
        await agent.aclose()
        assert not tool.connection.running


async def test_a_failing_server_stops_open_agent_before_a_session_is_created(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "sessions.sqlite")
    await store.open()
    try:
        config = Config(mcp_servers=[McpServer(name="ghost", command="/nonexistent/mcp")])
        with pytest.raises(McpServerError, match="MCP server 'ghost': cannot start"):
            await open_agent(config=config, cwd=tmp_path, store=store)
        assert (await store.list()).sessions == ()
    finally:
        await store.aclose()


# --- names, schemas, content ---------------------------------------------------------------------


def test_names_keep_to_the_providers_charset_and_length() -> None:
    assert tool_name("files", "read") == "files__read"
    assert tool_name("my server", "do.it/now") == "my_server__do_it_now"
    long = tool_name("s", "x" * 100)
    assert len(long) == MAX_TOOL_NAME
    assert long != tool_name("s", "x" * 101)
    assert tool_name("a", "b.c", hashed=True) != tool_name("a", "b_c", hashed=True)


def test_argument_check_keeps_json_types_apart() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "x": {"type": ["number", "null"]}},
        "additionalProperties": False,
    }
    assert argument_problems(schema, {"n": 3, "x": None}) == []
    assert argument_problems(schema, {"n": 3.0, "x": 1.5}) == []
    assert argument_problems(schema, {"n": True, "extra": 1}) == [
        "n: expected integer (got True)",
        "extra: unknown argument",
    ]


def test_non_text_content_is_described() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(type="text", text="see:"),
            mcp_types.ImageContent(type="image", data="AAAA", mimeType="image/png"),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="body"),
            ),
        ]
    )
    assert result_text(result) == (
        "see:\n[image content: image/png, about 3 bytes, not shown]\n[resource file:///a.txt]\nbody"
    )
    structured = mcp_types.CallToolResult(content=[], structuredContent={"result": 3})
    assert result_text(structured) == '{"result": 3}'


async def test_a_resume_that_fails_after_connecting_stops_the_servers_and_gives_the_lease_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sessions.sqlite"
    async with SQLiteStore(path) as store:
        first = await open_agent(
            config=Config(), cwd=tmp_path, store=store, gateway=ScriptedGateway([Reply(text="hi")])
        )
        first.send("hello")
        await first.when_idle()
        await first.aclose()
        connected: list[McpToolset] = []
        connect = McpToolset.connect

        async def recorded(servers: list[McpServer]) -> McpToolset:
            toolset = await connect(servers)
            connected.append(toolset)
            return toolset

        monkeypatch.setattr(McpToolset, "connect", staticmethod(recorded))
        config = Config(mcp_servers=[fixture_server()])
        with pytest.raises(ConfigError, match="no-such-model"):
            await open_agent(
                config=config,
                cwd=tmp_path,
                store=store,
                session_id=first.session_id,
                model="no-such-model",
            )
        [toolset] = connected
        assert not any(connection.running for connection in toolset.connections)
    async with SQLiteStore(path) as other:  # the writer lease was given back
        info = await other.acquire(first.session_id)
        assert info.id == first.session_id
        await other.release(first.session_id)
