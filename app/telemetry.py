"""Live traces: each session a front end opens sends its spans as its turns go, when
`[telemetry] otlp_endpoint` is set (`replay.trace_spans` makes them, `replay.otlp` sends them).

The spans are made inside each append (cheap, no I/O) and queued for the SDK's batch thread, so a
slow or dead collector never holds a turn; `close` flushes what is queued, waiting at most the
configured timeout. Front ends make one only when an endpoint is configured, so without one no
OpenTelemetry module loads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from app.version import VERSION
from engine.events import Event, LiveEvent

if TYPE_CHECKING:
    from engine.agent import Agent
    from engine.config import ModelEntry, TelemetryConfig
    from replay.otlp import BatchSink


class LiveTelemetry:
    """One `[telemetry]` section's sink, shared by the sessions a front end opens under it.
    Raises `OtelMissing` when the `otel` extra is not installed."""

    def __init__(self, settings: TelemetryConfig) -> None:
        from replay.otlp import BatchSink

        self.settings = settings
        self._sink: BatchSink = BatchSink(
            settings.traces_url(), timeout=settings.timeout, version=VERSION
        )

    def watch(self, agent: Agent, models: Mapping[str, ModelEntry]) -> Callable[[], None]:
        """Send the spans of what `agent` does from now on (`models`: the entries its binds
        name); returns the function that stops."""
        from replay.trace_spans import TraceProjection, resolver_of

        projection = TraceProjection(
            agent.session_id,
            resolver_of(models),
            capture_content=self.settings.capture_content,
            max_class=self.settings.effective_egress(),
            bound=agent.model.name,
            request_of=lambda _start: agent.last_assembly,
        )
        sink = self._sink

        def follow(event: Event | LiveEvent) -> None:
            if isinstance(event, Event):
                finished = projection.apply(event)
                if finished:
                    sink.send(finished)

        return agent.subscribe(follow)

    def close(self) -> bool:
        """Flush what is queued (at most the configured timeout); whether the collector took
        every span."""
        return self._sink.close()
