"""Hypercorn serving the streamable HTTP transport (`app.acp.http_transport`) in `trellis serve`.

The socket is bound here, before Hypercorn starts, so that an address in use is the same one-line
error as for the WebSocket port and `--http-port 0` learns its port; Hypercorn takes it over
(`fd://`). Without TLS, Hypercorn speaks HTTP/2 to a client that starts with it (prior knowledge,
or an `Upgrade: h2c`) and HTTP/1.1 to the others; Hypercorn's log goes to `trellis.log`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from dataclasses import dataclass
from typing import cast

from hypercorn.asyncio import serve
from hypercorn.config import Config
from hypercorn.typing import Framework

from app.acp.http_transport import AcpHttpApp

SHUTDOWN_GRACE = 3.0
"""Seconds the server waits for requests in flight when it stops (the streams have ended)."""


@dataclass(slots=True)
class HttpServer:
    """A running Hypercorn: its port, and what stops it (`aclose`)."""

    app: AcpHttpApp
    port: int
    _stop: asyncio.Event
    _task: asyncio.Task[None]

    async def aclose(self) -> None:
        """End every HTTP connection (their prompts are cancelled and stored), then stop
        Hypercorn: no new requests, the ones in flight finish or are cut after the grace."""
        await self.app.aclose()
        self._stop.set()
        await self._task


async def listen_http(app: AcpHttpApp, host: str, port: int) -> HttpServer:
    """Bind `host:port` and serve `app` there; raises `OSError` when it cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host.strip("[]"), port), family=family)
    bound = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.errorlog = logging.getLogger("hypercorn.error")
    config.accesslog = None
    config.graceful_timeout = SHUTDOWN_GRACE
    config.websocket_max_message_size = app.limits.max_incoming
    config.include_server_header = False
    stop = asyncio.Event()
    task = asyncio.ensure_future(serve(cast(Framework, app), config, shutdown_trigger=stop.wait))
    return HttpServer(app, bound, stop, task)
