"""What every network gateway shares: one streaming POST, server-sent-event framing, error classes.

The gateways never retry; they classify. Timeouts, connection failures, HTTP 408, 429 and 5xx are
transient (`GatewayError.transient`), so the agent loop may retry them with a `retry` event; any
other 4xx is permanent and carries the provider's own error message. The stream deadlines
(`deadlines.py`) bound a response that sends bytes but no events. API keys are read from the
environment at request time; every error a gateway raises passes through the redactor (the key
it sent and every other secret Trellis holds) at one boundary, `HttpGateway.stream`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import ssl
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from engine.gateway.base import (
    DEFAULT_TIMEOUT,
    Codec,
    GatewayError,
    GatewayType,
    ModelRequest,
    StreamDelta,
)
from engine.gateway.codecs import codec_for
from engine.gateway.deadlines import StreamClock, StreamDeadlines
from engine.redaction import Redactor

log = logging.getLogger(__name__)

TRANSIENT_STATUSES = frozenset({408, 429})
"""4xx statuses worth retrying; every 5xx is too."""

ERROR_MESSAGE_CHARS = 600
"""How long a gateway error message may be; endpoint text beyond it (an HTML page, a garbage
line) is cut, after redaction, so a secret is never cut in half and half shown."""


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One server-sent event: its `event` field ("" when absent) and its joined `data` lines."""

    event: str
    data: str


class SseDecoder:
    """Server-sent-event framing (WHATWG): lines in, events out; comments and `id`/`retry` ignored."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []

    def feed_line(self, line: str) -> SseEvent | None:
        """Take one line (without its line ending); return the event a blank line completes."""
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

    def flush(self) -> SseEvent | None:
        """The pending event, if it has data; a stream may end without the final blank line."""
        event = SseEvent(self._event, "\n".join(self._data)) if self._data else None
        self._event = ""
        self._data = []
        return event


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: building one reads the CA bundle (~0.1 s)."""
    return httpx.create_ssl_context()


def is_transient_status(status: int) -> bool:
    return status in TRANSIENT_STATUSES or status >= 500


def error_message_of(body: bytes | str) -> str:
    """The provider's own error message from an error body (OpenAI, Gemini, Anthropic, Ollama shapes)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        return text.strip()
    if isinstance(parsed, list) and parsed:  # Gemini's streaming endpoint wraps errors in a list
        parsed = parsed[0]
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed)
        if isinstance(error, str):
            return error
        if isinstance(error, dict):
            message = error.get("message")
            kind = error.get("type") or error.get("status")
            if isinstance(message, str) and message:
                return f"{message} ({kind})" if isinstance(kind, str) and kind else message
    return text.strip()


def parse_json_event(provider: str, event: SseEvent) -> dict[str, Any]:
    """The JSON object an event carries; anything else is a malformed stream."""
    try:
        value = json.loads(event.data)
    except ValueError:
        raise GatewayError(
            f"{provider}: malformed stream: an event's data is not JSON: {event.data!r}"
        ) from None
    if not isinstance(value, dict):
        raise GatewayError(
            f"{provider}: malformed stream: expected a JSON object, got {type(value).__name__}"
        )
    return value


class HttpEndpoint:
    """One provider base URL, its limits, the name of the variable holding its key, its redactor.

    Owns the `httpx.AsyncClient` (one connection pool per gateway); `transport` lets tests mount
    an in-process transport, though the test suite uses real loopback servers. `timeout` bounds
    connecting and sending the request; reading is bounded by the `deadlines` alone (a socket
    read timeout would restart with every keep-alive chunk, and cut a long-thinking model short).
    """

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        timeout: float,
        deadlines: StreamDeadlines,
        api_key_env: str = "",
        keepalive_events: frozenset[str] = frozenset(),
        redactor: Redactor | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.deadlines = deadlines
        self.api_key_env = api_key_env
        self.keepalive_events = keepalive_events
        self._redactor = redactor or Redactor()
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, read=None),
            transport=transport,
            verify=_tls_context(),
        )

    def __repr__(self) -> str:
        return f"HttpEndpoint({self.provider!r}, {self.base_url!r}, key from {self.api_key_env!r})"

    def api_key(self) -> str | None:
        """The key from the environment; None when no variable is configured.

        Raises a permanent `GatewayError` naming the variable (never a value) when it is unset.
        """
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise GatewayError(
                f"{self.provider}: the API key variable {self.api_key_env} is not set in the environment"
            )
        return key

    def redact(self, text: str) -> str:
        """`text` without the key this endpoint sends (read now: it may have been rotated) or
        any other secret Trellis holds."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return self._redactor.with_secrets(key)(text)

    def scrub(self, error: GatewayError) -> None:
        """Redact `error`'s message in place, then cut it to `ERROR_MESSAGE_CHARS`."""
        message = self.redact(str(error))
        if len(message) > ERROR_MESSAGE_CHARS:
            message = message[: ERROR_MESSAGE_CHARS - 1] + "…"
        error.args = (message,)

    async def events(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> AsyncGenerator[SseEvent, None]:
        """POST `body` as JSON to `path` and yield the response's server-sent events.

        Raises `GatewayError`: transient for timeouts, an expired stream deadline
        (`DeadlineExceededError`), connection failures, 408/429/5xx; permanent for other 4xx
        (with the provider's message) and for a response that is not an event stream. Messages
        may quote the endpoint: the caller redacts them.
        """
        url = f"{self.base_url}/{path.lstrip('/')}"
        clock = StreamClock(self.deadlines, self.provider)
        try:
            request = self._client.build_request(
                "POST", url, json=dict(body), headers=dict(headers)
            )
            async with asyncio.timeout_at(clock.deadline()):
                response = await self._client.send(request, stream=True)
            try:
                async with asyncio.timeout_at(clock.deadline()):
                    await self._refuse_errors(response)
                decoder = SseDecoder()
                lines = response.aiter_lines()
                while True:
                    # spec: only events count; comments and blank lines keep no deadline alive
                    async with asyncio.timeout_at(clock.deadline()):
                        line = await anext(lines, None)
                    if line is None:
                        break
                    event = decoder.feed_line(line)
                    if event is None:
                        continue
                    if event.event not in self.keepalive_events:
                        clock.event()
                    yield event
                tail = decoder.flush()
                if tail is not None:
                    yield tail
            finally:
                await response.aclose()
        except TimeoutError:
            raise clock.expired() from None
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise GatewayError(
                f"{self.provider}: cannot use the URL {url!r}: {exc} "
                "(base_url must start with http:// or https://)"
            ) from exc
        except httpx.TimeoutException as exc:
            raise GatewayError(
                f"{self.provider}: could not connect and send within {self.timeout:g}s "
                f"({type(exc).__name__})",
                transient=True,
            ) from exc
        except httpx.TransportError as exc:
            detail = str(exc) or type(exc).__name__
            raise GatewayError(
                f"{self.provider}: connection to {self.base_url} failed: {detail}", transient=True
            ) from exc
        except httpx.HTTPError as exc:  # e.g. a body that fails to decode
            raise GatewayError(f"{self.provider}: malformed response: {exc}") from exc

    async def _refuse_errors(self, response: httpx.Response) -> None:
        """Raise for an error status, or for JSON where an event stream was expected."""
        if response.status_code >= 400:
            raise self._status_error(response, await response.aread())
        content_type = response.headers.get("content-type", "")
        if "event-stream" not in content_type and "json" in content_type:
            raw = await response.aread()
            raise GatewayError(
                f"{self.provider}: malformed stream: expected text/event-stream, got "
                f"{content_type}: {error_message_of(raw)}",
                status=response.status_code,
            )

    def _status_error(self, response: httpx.Response, body: bytes) -> GatewayError:
        status = response.status_code
        message = error_message_of(body) or response.reason_phrase
        retry_after = response.headers.get("retry-after")
        suffix = f" (retry after {retry_after}s)" if retry_after else ""
        return GatewayError(
            f"{self.provider}: HTTP {status}: {message}{suffix}",
            transient=is_transient_status(status),
            status=status,
        )

    async def aclose(self) -> None:
        await self._client.aclose()


class StreamReader(Protocol):
    """Turns one provider's server-sent events into stream deltas."""

    done: bool

    def feed(self, event: SseEvent) -> list[StreamDelta]: ...

    def close(self) -> list[StreamDelta]: ...


class HttpGateway(ABC):
    """The shell every network gateway shares: codec, endpoint, the streaming loop, closing.

    A provider supplies its request body, path, headers and stream reader.
    """

    gateway_type: GatewayType
    default_base_url: str
    keepalive_events: frozenset[str] = frozenset()
    """Names of events that only keep the connection alive: they count toward no deadline."""

    def __init__(
        self,
        *,
        base_url: str = "",
        api_key_env: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        deadlines: StreamDeadlines | None = None,
        redactor: Redactor | None = None,
        provider_name: str = "",
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._codec = codec_for(self.gateway_type)
        self._endpoint = HttpEndpoint(
            provider=provider_name or self.gateway_type.value,
            base_url=base_url or self.default_base_url,
            timeout=timeout,
            deadlines=deadlines or StreamDeadlines(),
            api_key_env=api_key_env,
            keepalive_events=self.keepalive_events,
            redactor=redactor,
            transport=transport,
        )

    @property
    def codec(self) -> Codec:
        return self._codec

    @abstractmethod
    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for `request`."""

    @abstractmethod
    def _path(self, request: ModelRequest) -> str: ...

    @abstractmethod
    def _headers(self) -> dict[str, str]: ...

    @abstractmethod
    def _reader(self) -> StreamReader: ...

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta]:
        """The response's deltas; raises `GatewayError` with every secret redacted from it."""
        reader = self._reader()
        body = self.request_body(request)
        try:
            events = self._endpoint.events(self._path(request), body, self._headers())
            async with contextlib.aclosing(events):
                async for event in events:
                    for delta in reader.feed(event):
                        yield delta
                    if reader.done:
                        break
            for delta in reader.close():
                yield delta
        except GatewayError as exc:
            # the boundary: whatever the endpoint sent, quoted by the endpoint or a reader
            self._endpoint.scrub(exc)
            log.warning("model call failed: %s", exc)
            raise

    async def aclose(self) -> None:
        await self._endpoint.aclose()


def stream_error(provider: str, error: Any) -> GatewayError:
    """An error object sent inside a 200 stream (vLLM, OpenRouter and Gemini do this)."""
    if not isinstance(error, dict):
        return GatewayError(f"{provider}: error in stream: {error}")
    code = error.get("code")
    status = code if isinstance(code, int) else None
    message = json_str(error.get("message")) or json.dumps(error)
    return GatewayError(
        f"{provider}: error in stream: {message}",
        transient=status is not None and is_transient_status(status),
        status=status,
    )


def json_int(value: Any) -> int:
    """A count from provider JSON; anything but an int counts as 0."""
    return value if isinstance(value, int) else 0


def json_str(value: Any) -> str:
    return value if isinstance(value, str) else ""
