"""`trellis serve`: the process that serves ACP until it is asked to stop, over WebSocket and over
streamable HTTP (the remote-transport RFD, `app.acp.http_transport`), to the same sessions.

It reads the `[serve]` section (an untrusted project config cannot set it), finds or makes the
token, binds both ports, prints where it listens and where the token is, and on SIGTERM, SIGINT or
SIGHUP stops accepting, closes every connection (their running turns end `cancelled` and are
stored) and closes the core, which gives each session's lease back.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from app.acp.auth import ServeToken, load_token
from app.acp.core import AcpOptions, AcpServer
from app.acp.http_server import HttpServer, listen_http
from app.acp.http_transport import AcpHttpApp
from app.acp.websocket import ACP_PATH, AcpWebSocketServer, close_server
from app.stop_signals import on_stop_signals
from engine.errors import TrellisError
from engine.store.settings import StoreSettings

if TYPE_CHECKING:
    from engine.config import ServeConfig
    from engine.redaction import RedactingLogFilter

STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")
"""Each one stops the server cleanly; a second one is handled the same (the stop is under way)."""


async def serve(
    settings: ServeConfig,
    *,
    started_in: Path,
    host: str | None = None,
    port: int | None = None,
    http_port: int | None = None,
    trust_project: bool = False,
    log_secrets: RedactingLogFilter | None = None,
    store: StoreSettings | None = None,
) -> None:
    """Serve until a stop signal; raises `TrellisError` when the token, the store or the address
    is unusable.

    `host`, `port` and `http_port` override the configured ones; `started_in` is the default
    root; `store` names the session store (None: the SQLite file in the data directory).
    """
    store = store or StoreSettings()
    token = await asyncio.to_thread(load_token, settings.token_env)
    if log_secrets is not None:
        log_secrets.redactor = log_secrets.redactor.with_secrets(token.value)
    roots = settings.root_paths(started_in)
    acp = AcpServer(
        AcpOptions(roots=roots, store=store, trust_project=trust_project, secrets=(token.value,))
    )
    await acp.open()
    transport = AcpWebSocketServer(acp, token=token.value, allowed_origins=settings.allowed_origins)
    host = host if host is not None else settings.host
    port = port if port is not None else settings.port
    try:
        server = await transport.listen(host, port)
    except OSError as exc:
        await acp.aclose()
        raise TrellisError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    bound = server.sockets[0].getsockname()[1] if server.sockets else port
    http_port = settings.http_port_for(port) if http_port is None else http_port
    http_app = AcpHttpApp(acp, token=token.value, allowed_origins=settings.allowed_origins)
    try:
        http: HttpServer = await listen_http(http_app, host, http_port)
    except OSError as exc:
        await close_server(server)
        await acp.aclose()
        raise TrellisError(f"cannot listen on {host}:{http_port}: {exc.strerror or exc}") from exc
    stop = asyncio.Event()
    try:
        with on_stop_signals(STOP_SIGNALS, stop.set):
            _banner(url_of(host, bound), http_url_of(host, http.port), roots, token, store)
            await stop.wait()
    finally:
        # 1. no new connections, every open one closed: their turns are cancelled and stored
        await http.aclose()
        await close_server(server)
        # 2. the agents disposed: leases given back, the store closed
        await acp.aclose()
    print("trellis: stopped", file=sys.stderr, flush=True)


def url_of(host: str, port: int, scheme: str = "ws") -> str:
    """The URL of the ACP endpoint (an IPv6 address in brackets)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{scheme}://{shown}:{port}{ACP_PATH}"


def http_url_of(host: str, port: int) -> str:
    """The `http://` URL of the streamable HTTP endpoint."""
    return url_of(host, port, "http")


def _banner(
    url: str, http_url: str, roots: list[Path], token: ServeToken, store: StoreSettings
) -> None:
    """Where the token is, then the URL: the URL line comes last, once everything is ready."""
    if token.created:
        # the only time the value is shown: it is in the file from now on
        print(f"trellis: new token {token.value} (stored in {token.source})", file=sys.stderr)
    print(
        f"trellis: token from {token.source}; send it as `Authorization: Bearer TOKEN`",
        file=sys.stderr,
    )
    print(
        f"trellis: streamable HTTP (HTTP/2, or a WebSocket upgrade) at {http_url}",
        file=sys.stderr,
    )
    under = ", ".join(str(root) for root in roots)
    stored = f", stored in {store.shown}" if store.url is not None else ""
    print(
        f"trellis: serving ACP at {url} (sessions under {under}{stored})",
        file=sys.stderr,
        flush=True,
    )
