"""A local model server for tests: OpenAI's `GET /v1/models` on 127.0.0.1 and a free port.

Tests never ask a server the machine happens to run: they start one of these (in a thread, so
in-process tests and `trellis` child processes alike can ask it) and name its port, either as a
`LocalServer` or in `TRELLIS_LOCAL_SERVERS`. `SilentPort` is a port that takes connections and
never answers.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from engine.local_servers import LocalServer


class ModelListServer:
    """Answers `/v1/models` with `models` (ids, or whole entries), or with `status` and `body`."""

    def __init__(
        self,
        models: Sequence[str | Mapping[str, Any]] = (),
        *,
        status: int = 200,
        body: bytes | None = None,
    ) -> None:
        data = [{"id": m, "object": "model"} if isinstance(m, str) else dict(m) for m in models]
        self.body = body if body is not None else json.dumps({"object": "list", "data": data})
        self.status = status
        self.paths: list[str] = []
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.paths.append(self.path)
                payload = served.body
                raw = payload.encode() if isinstance(payload, str) else payload
                found = self.path == "/v1/models"
                self.send_response(served.status if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw) if found else 0))
                self.end_headers()
                if found:
                    self.wfile.write(raw)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def server(self, name: str = "ollama", *, at_start: bool = True) -> LocalServer:
        return LocalServer(name=name, label=name, port=self.port, at_start=at_start)

    def __enter__(self) -> ModelListServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()


class SilentPort:
    """A port on 127.0.0.1 whose connections are taken (the backlog) and never answered."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(8)
        self.port: int = self._socket.getsockname()[1]

    def server(self, name: str = "llamacpp") -> LocalServer:
        return LocalServer(name=name, label=name, port=self.port)

    def __enter__(self) -> SilentPort:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._socket.close()


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (just released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
