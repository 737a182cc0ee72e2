"""The MCP client side of `engine.tools.mcp`: a connection per stdio server, and its remote tools
as Trellis `Tool`s.

Each connection lives in its own asyncio task, because the `mcp` client's transport and session are
anyio context managers that must be entered and left by the same task; tool calls from the agent's
tasks go through the session's streams. A server's stderr never reaches the terminal (it would
garble the TUI): it is logged at debug level and its tail is quoted when the server fails to start.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import IO, Any, TextIO

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp import types as mcp_types
from mcp.shared.exceptions import McpError
from pydantic import RootModel

from engine.config import McpServer
from engine.gateway.base import ToolSpec
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.tools.mcp_schema import (
    argument_problems,
    describe_parameters,
    input_schema,
    tool_name,
)
from engine.tools.mcp_server import DEFAULT_STARTUP_TIMEOUT, McpServerError
from engine.tools.tool import Tool, ToolContext, ToolKind, ToolOutput, bound_text

log = logging.getLogger(__name__)

DEFAULT_CLOSE_TIMEOUT = 5.0
"""Seconds a server has to stop after its stdin closes before its task is cancelled (which kills it)."""

STDERR_TAIL = 2_000
"""How many of the last characters a server wrote to stderr are kept for error messages."""

STDERR_SETTLE = 1.0
"""Seconds to wait, after a failed start, for the rest of the server's stderr to arrive."""


class McpConnection:
    """One running stdio MCP server: its session, the tools it listed, and how to stop it."""

    def __init__(
        self,
        server: McpServer,
        *,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        self.server = server
        self.startup_timeout = startup_timeout
        self.close_timeout = close_timeout
        self.remote_tools: tuple[mcp_types.Tool, ...] = ()
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self._closing = asyncio.Event()
        self._stderr = _StderrTail(server.name)

    @property
    def name(self) -> str:
        return self.server.name

    @property
    def running(self) -> bool:
        return self._session is not None and self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Launch the server, `initialize`, and list its tools; raises `McpServerError` on failure,
        leaving nothing running."""
        if self._task is not None:
            raise RuntimeError(f"MCP server {self.name!r} was already started")
        await self._stderr.open()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(ready), name=f"mcp:{self.name}")
        self._task.add_done_callback(self._ended)
        try:
            done, _ = await asyncio.wait(
                {ready, self._task},
                timeout=self.startup_timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except BaseException:
            await self._stop(cancel=True)
            await self._stderr.settle(0)
            raise
        if ready in done:
            self._started = True
            return
        if self._task in done:
            cause = _describe_failure(self.server, self._task.exception())
        else:
            cause = f"no answer within {self.startup_timeout:g} s of starting"
        await self._stop(cancel=True)
        await self._stderr.settle(STDERR_SETTLE)
        raise McpServerError(self.name, cause, stderr=self._stderr.text)

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> mcp_types.CallToolResult:
        """Call a remote tool; the caller bounds the wait. Raises `McpServerError` if the server
        is not running, `McpError` for a protocol-level error (the connection closed included)."""
        session = self._session
        if session is None or not self.running:
            raise McpServerError(self.name, "the server is not running")
        return await session.call_tool(name, dict(arguments))

    async def aclose(self) -> None:
        """Stop the server (stdin closed, then terminated if it lingers); safe to call twice."""
        await self._stop(cancel=False)
        await self._stderr.settle(0)

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        # The whole life of the connection, in one task (the anyio scopes require it).
        parameters = StdioServerParameters(
            command=self.server.command,
            args=list(self.server.args),
            env={**os.environ, **self.server.env},
        )
        try:
            async with stdio_client(parameters, errlog=self._stderr.child_end) as (read, write):
                self._stderr.release_child_end()  # the child holds it now; EOF comes when it exits
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    self.remote_tools = await _list_tools(session)
                    self._session = session
                    ready.set_result(None)
                    await self._closing.wait()
        finally:
            self._session = None
            self._stderr.release_child_end()

    async def _stop(self, *, cancel: bool) -> None:
        task = self._task
        if task is None or task.done():
            return
        self._closing.set()
        if cancel:
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=self.close_timeout)
        if not done:
            task.cancel()
            await asyncio.wait({task})

    def _ended(self, task: asyncio.Task[None]) -> None:
        # A failed start is reported by `start`; an error while closing is noise (a late message
        # from the server meeting a closed stream); only an unasked-for end deserves a warning.
        if task.cancelled() or (error := task.exception()) is None or not self._started:
            return
        level = logging.DEBUG if self._closing.is_set() else logging.WARNING
        log.log(
            level, "MCP server %r stopped: %s", self.name, _describe_failure(self.server, error)
        )


class McpArguments(RootModel[dict[str, Any]]):
    """The arguments exactly as the model gave them: the server's JSON schema, not a pydantic
    model, describes a remote tool, so `McpTool.run` checks them against that schema."""


class McpTool(Tool[McpArguments]):
    """A tool of an MCP server. A remote tool may do anything, so it always asks permission."""

    args_model = McpArguments
    kind = ToolKind.other
    needs_permission = True

    def __init__(self, connection: McpConnection, remote: mcp_types.Tool) -> None:
        self.connection = connection
        self.remote_name = remote.name
        self.schema = input_schema(remote.inputSchema)
        annotations = remote.annotations
        self.may_change_workspace = not (annotations is not None and annotations.readOnlyHint)

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.schema)

    async def run(self, args: McpArguments, ctx: ToolContext) -> ToolOutput:
        server = self.connection.name
        problems = argument_problems(self.schema, args.root)
        if problems:
            return ToolOutput.error(
                f"invalid arguments for {self.name}: {'; '.join(problems)}. "
                f"Parameters: {describe_parameters(self.schema)}."
            )
        try:
            async with asyncio.timeout(ctx.timeout):
                result = await self.connection.call_tool(self.remote_name, args.root)
        except TimeoutError:
            return ToolOutput.error(
                f"{self.name}: MCP server {server!r} did not answer within {ctx.timeout:g} s"
            )
        except McpError as error:
            return ToolOutput.error(f"{self.name}: MCP server {server!r}: {error}")
        except McpServerError as error:
            return ToolOutput.error(f"{self.name}: {error}")
        return ToolOutput(
            bound_text(result_text(result), ctx.max_output),
            is_error=result.isError,
            # what a server returns is internal (docs/spec/context-orchestration.md); the parent
            # names the server
            label=PrivatizationLabel.of(PrivacyClass.internal, f"mcp:{server}"),
        )


def result_text(result: mcp_types.CallToolResult) -> str:
    """The model's view of a call result: text content verbatim, anything else described."""
    parts = [_content_text(block) for block in result.content]
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False))
    return "\n".join(parts) if parts else "(no output)"


def _content_text(block: mcp_types.ContentBlock) -> str:
    match block:
        case mcp_types.TextContent():
            return block.text
        case mcp_types.ImageContent() | mcp_types.AudioContent():
            size = len(block.data) * 3 // 4  # base64 to bytes, near enough
            return f"[{block.type} content: {block.mimeType}, about {size} bytes, not shown]"
        case mcp_types.ResourceLink():
            return f"[resource link: {block.uri}" + (f" ({block.name})]" if block.name else "]")
        case mcp_types.EmbeddedResource():
            contents = block.resource
            if isinstance(contents, mcp_types.TextResourceContents):
                return f"[resource {contents.uri}]\n{contents.text}"
            mime = contents.mimeType or "binary"
            return f"[resource {contents.uri}: {mime} content, not shown]"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


def bind_tools(connections: Sequence[McpConnection]) -> list[McpTool]:
    """One Tool class per remote tool (a tool's name is a class attribute), names kept unique."""
    taken: set[str] = set()
    bound: list[McpTool] = []
    for connection in connections:
        for remote in connection.remote_tools:
            name = tool_name(connection.name, remote.name)
            if name in taken:
                name = tool_name(connection.name, remote.name, hashed=True)
            taken.add(name)
            description = remote.description or f"{remote.name} from MCP server {connection.name}"
            bound.append(_tool_class(name, description)(connection, remote))
    return bound


def _tool_class(tool_name: str, tool_description: str) -> type[McpTool]:
    class BoundMcpTool(McpTool):
        name = tool_name
        description = tool_description

    BoundMcpTool.__qualname__ = f"McpTool[{tool_name}]"
    return BoundMcpTool


async def _list_tools(session: ClientSession) -> tuple[mcp_types.Tool, ...]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(cursor)
        tools.extend(page.tools)
        cursor = page.nextCursor
        if not cursor:
            return tuple(tools)


def _describe_failure(server: McpServer, error: BaseException | None) -> str:
    """The root cause of a failed connection task, in words (anyio wraps it in exception groups)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = next(
            (e for e in error.exceptions if not isinstance(e, asyncio.CancelledError)),
            error.exceptions[0],
        )
    if error is None:
        return "the server stopped"
    command = " ".join([server.command, *server.args])
    if isinstance(error, FileNotFoundError):
        return f"cannot start {command!r}: command not found"
    if isinstance(error, PermissionError):
        return f"cannot start {command!r}: permission denied"
    if isinstance(error, McpError):
        if error.error.code == mcp_types.CONNECTION_CLOSED:
            return f"{command!r} exited before answering"
        return f"error from {command!r}: {error}"
    return f"{command!r} failed: {type(error).__name__}: {error}"


class _StderrTail:
    """A server's stderr, through a pipe: logged at debug level, its last characters kept."""

    def __init__(self, server: str, limit: int = STDERR_TAIL) -> None:
        self.server = server
        self.limit = limit
        self.text = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        read_fd, write_fd = os.pipe()
        self._read_end: IO[bytes] = os.fdopen(read_fd, "rb", buffering=0)
        self.child_end: TextIO = os.fdopen(write_fd, "w")
        self._transport: asyncio.ReadTransport | None = None
        self._pump: asyncio.Task[None] | None = None

    async def open(self) -> None:
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), self._read_end
        )
        self._pump = asyncio.create_task(self._run(reader), name=f"mcp-stderr:{self.server}")

    def release_child_end(self) -> None:
        """Close the parent's copy of the write end, so EOF arrives when the server exits."""
        if not self.child_end.closed:
            self.child_end.close()

    async def settle(self, grace: float) -> None:
        """Wait up to `grace` seconds for EOF, then stop reading."""
        self.release_child_end()
        if self._pump is not None:
            done, _ = await asyncio.wait({self._pump}, timeout=grace)
            if not done:
                self._pump.cancel()
                await asyncio.wait({self._pump})
        if self._transport is not None:
            self._transport.close()
        elif not self._read_end.closed:
            self._read_end.close()

    async def _run(self, reader: asyncio.StreamReader) -> None:
        while chunk := await reader.read(4096):
            text = self._decoder.decode(chunk)
            log.debug("MCP server %r stderr: %s", self.server, text.rstrip())
            self.text = (self.text + text)[-self.limit :]
