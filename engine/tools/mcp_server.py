"""An MCP server's start: the time it is given, and the error that names it when it fails.

Apart from `engine.tools.mcp_client` so that the toolset and the error's catchers need not import
the slow `mcp` package, and apart from `engine.tools.mcp` so that the client does not import the
toolset that imports it.
"""

from __future__ import annotations

from engine.errors import TrellisError

DEFAULT_STARTUP_TIMEOUT = 30.0
"""Seconds a server has to start, answer `initialize` and list its tools."""


class McpServerError(TrellisError):
    """An MCP server could not be started, initialized or listed; names the server and the cause."""

    def __init__(self, server: str, cause: str, *, stderr: str = "") -> None:
        self.server = server
        self.cause = cause
        self.stderr = stderr
        message = f"MCP server {server!r}: {cause}"
        if stderr.strip():
            message += f"\nits stderr ended with:\n{stderr.rstrip()}"
        super().__init__(message)
