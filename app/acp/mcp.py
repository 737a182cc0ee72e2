"""MCP servers an ACP client passes in `session/new` / `session/load`: each stdio server is started
on its own, so one that fails is reported and the session still works with the others. Their tools
join the session's registry as transient tools (not part of the stable floor's environment block).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from acp.schema import AcpMcpServer, HttpMcpServer, McpServerStdio, SseMcpServer

from engine.config import McpServer
from engine.tools import ToolRegistry
from engine.tools.mcp import McpToolset

log = logging.getLogger(__name__)

ClientMcpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


@dataclass(slots=True)
class ClientServers:
    """The servers that started (closed with the session) and a line for each that did not."""

    toolsets: list[McpToolset] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def register_into(self, registry: ToolRegistry) -> ToolRegistry:
        for toolset in self.toolsets:
            for tool in toolset.tools:
                if tool.name in registry:
                    self.failures.append(f"MCP tool {tool.name!r} is already registered; skipped")
                    continue
                registry.register(tool, transient=True)
        return registry

    async def aclose(self) -> None:
        for toolset in self.toolsets:
            await toolset.aclose()


async def start_client_servers(servers: Sequence[ClientMcpServer]) -> ClientServers:
    """Start each stdio server; other transports and failures are reported, never raised."""
    started = ClientServers()
    for server in servers:
        if not isinstance(server, McpServerStdio):
            started.failures.append(
                f"MCP server {server.name!r}: only stdio servers are supported, not {server.type}"
            )
            continue
        try:
            config = McpServer(
                name=server.name,
                command=server.command,
                args=list(server.args),
                env={variable.name: variable.value for variable in server.env},
            )
            started.toolsets.append(await McpToolset.connect([config]))
        except Exception as error:  # McpServerError, a bad name or command: reported, not fatal
            log.warning("client MCP server %r failed: %s", server.name, error)
            started.failures.append(str(error).splitlines()[0])
    return started
