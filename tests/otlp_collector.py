"""A loopback OTLP/HTTP collector for the trace tests: it takes `POST /v1/traces`, decodes the
protobuf body with `opentelemetry-proto` and keeps the spans, flattened to what tests assert on."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_id: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    error: bool
    resource: dict[str, Any]

    @property
    def client(self) -> bool:
        return self.kind == Span.SPAN_KIND_CLIENT


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind is not None else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


class Collector:
    """What the collector received; `url` is its base (`http://127.0.0.1:PORT`)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.spans: list[ReceivedSpan] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()

    def take(self, body: bytes, path: str) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        received = [
            ReceivedSpan(
                name=span.name,
                kind=span.kind,
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_id=span.parent_span_id.hex(),
                start_ns=span.start_time_unix_nano,
                end_ns=span.end_time_unix_nano,
                attributes=_attributes(span.attributes),
                error=span.status.code == Status.STATUS_CODE_ERROR,
                resource=_attributes(resource.resource.attributes),
            )
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        with self._lock:
            self.paths.append(path)
            self.spans.extend(received)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[ReceivedSpan]:
        """The spans once at least `count` arrived (fails after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.spans) >= count:
                    return list(self.spans)
            time.sleep(0.02)
        raise AssertionError(f"{count} spans expected, {len(self.spans)} arrived: {self.spans}")


@contextmanager
def collector() -> Iterator[Collector]:
    """A collector on a free loopback port for the block's duration."""
    found: list[Collector] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            found[0].take(body, self.path)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.append(Collector(f"http://127.0.0.1:{server.server_address[1]}"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
