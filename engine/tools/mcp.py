"""Tools from MCP servers (docs/ARCHITECTURE.md, tools): each configured stdio server is launched,
asked for its tools, and every remote tool joins the registry as a Trellis `Tool` named
`<server>__<tool>`.

`McpToolset.connect` starts every server and raises `McpServerError` naming the first that fails
(after closing the others), so a broken `[[mcp_servers]]` entry is reported instead of silently
losing its tools; `McpToolset.aclose` stops them, when the agent is disposed.

The `mcp` package takes about half a second to import (it brings its HTTP server stack along), so
it is imported only when a server is configured: the client lives in `engine.tools.mcp_client`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.config import McpServer
from engine.tools.mcp_server import DEFAULT_STARTUP_TIMEOUT
from engine.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from engine.tools.mcp_client import McpConnection, McpTool

log = logging.getLogger(__name__)


class McpToolset:
    """The MCP servers of one agent and the tools they offer; closed when the agent is disposed."""

    def __init__(
        self, connections: Sequence[McpConnection] = (), tools: Sequence[McpTool] = ()
    ) -> None:
        self.connections = tuple(connections)
        self.tools = tuple(tools)

    @classmethod
    async def connect(
        cls,
        servers: Sequence[McpServer],
        *,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    ) -> McpToolset:
        """Start every server at once. If any fails, the others are closed and the first failure
        (in configuration order) is raised as `McpServerError`; the rest are logged."""
        if not servers:
            return cls()
        # imported here, not at the top: the mcp package is slow to import (see the docstring)
        from engine.tools.mcp_client import McpConnection, bind_tools

        connections = [McpConnection(s, startup_timeout=startup_timeout) for s in servers]
        outcomes = await asyncio.gather(
            *(connection.start() for connection in connections), return_exceptions=True
        )
        failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        if not failures:
            return cls(connections, bind_tools(connections))
        await asyncio.gather(*(connection.aclose() for connection in connections))
        for extra in failures[1:]:
            log.warning("%s", extra)
        raise failures[0]

    def register_into(self, registry: ToolRegistry) -> ToolRegistry:
        """Add every remote tool to `registry` and return it."""
        for tool in self.tools:
            registry.register(tool)
        return registry

    async def aclose(self) -> None:
        """Stop every server; safe to call twice."""
        await asyncio.gather(*(connection.aclose() for connection in self.connections))
