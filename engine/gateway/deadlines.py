"""Deadlines of one streamed model response, counted in events, not in bytes.

The HTTP read timeout restarts with every chunk, so an endpoint that sends `: keep-alive` every
half second and never an event would keep a turn going forever. These deadlines see only events
(keep-alive comments, blank lines and a provider's `ping` events do not count): one to the first
event (long-thinking models need minutes), one between events, one for the whole request. Each
expiry is a transient `GatewayError`, so the agent loop retries it with a `retry` event and then
ends the turn with a message naming the deadline and its value.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from engine.gateway.base import GatewayError

DEFAULT_FIRST_EVENT_TIMEOUT = 180.0
DEFAULT_IDLE_TIMEOUT = 60.0
DEFAULT_REQUEST_TIMEOUT = 900.0

_EXPIRED = {
    "first_event_timeout": "no event within {seconds:g}s of sending the request",
    "idle_timeout": "no event for {seconds:g}s after the last one",
    "request_timeout": "the response did not finish within {seconds:g}s",
}
"""What each deadline's expiry means, by the model-entry setting that holds it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamDeadlines:
    """Seconds; the model entry's `first_event_timeout`, `idle_timeout` and `request_timeout`."""

    first_event: float = DEFAULT_FIRST_EVENT_TIMEOUT
    """From sending the request to its first event."""
    idle: float = DEFAULT_IDLE_TIMEOUT
    """From one event to the next."""
    request: float = DEFAULT_REQUEST_TIMEOUT
    """From sending the request to its last event."""


class DeadlineExceededError(GatewayError):
    """A stream deadline expired; transient, so the loop retries it."""

    def __init__(self, message: str, *, setting: str, seconds: float) -> None:
        super().__init__(message, transient=True)
        self.setting = setting
        self.seconds = seconds


class StreamClock:
    """The deadlines of one request in flight: started when it is sent, told of each event.

    Works on the event loop's clock, the one `asyncio.timeout_at` reads.
    """

    def __init__(self, deadlines: StreamDeadlines, provider: str) -> None:
        self._deadlines = deadlines
        self._provider = provider
        self._start = asyncio.get_running_loop().time()
        self._last_event: float | None = None

    def event(self) -> None:
        """An event arrived: the between-events deadline starts again."""
        self._last_event = asyncio.get_running_loop().time()

    def _binding(self) -> tuple[float, str, float]:
        """The nearest deadline: when it falls, its setting's name and its value."""
        limits = self._deadlines
        if self._last_event is None:
            event = (self._start + limits.first_event, "first_event_timeout", limits.first_event)
        else:
            event = (self._last_event + limits.idle, "idle_timeout", limits.idle)
        request = (self._start + limits.request, "request_timeout", limits.request)
        return min(event, request, key=lambda limit: limit[0])

    def deadline(self) -> float:
        """The loop time by which the next event (or the response's head) must arrive."""
        return self._binding()[0]

    def expired(self) -> DeadlineExceededError:
        """The error for the deadline that just passed."""
        _, setting, seconds = self._binding()
        what = _EXPIRED[setting].format(seconds=seconds)
        return DeadlineExceededError(
            f"{self._provider}: {what} ({setting} = {seconds:g})", setting=setting, seconds=seconds
        )
