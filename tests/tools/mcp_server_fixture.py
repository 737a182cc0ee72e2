"""A tiny stdio MCP server for the MCP client tests, run as `python mcp_server_fixture.py [MODE]`.

Modes: none (serve `add` and `fail`), `--slow` (also serve `nap`, which sleeps), `--crash`
(write to stderr and exit before answering anything).
"""

from __future__ import annotations

import asyncio
import sys

from mcp.server.fastmcp import FastMCP

server = FastMCP("fixture")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail() -> str:
    """Always fails."""
    raise RuntimeError("deliberate failure")


async def nap(seconds: float) -> str:
    """Sleep, then say so."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


if __name__ == "__main__":
    if "--crash" in sys.argv:
        sys.stderr.write("fixture: refusing to start (crash mode)\n")
        sys.exit(3)
    if "--slow" in sys.argv:
        server.tool()(nap)
    server.run("stdio")
