"""Live traces: each session a front end opens sends its spans as its turns go, when
`[telemetry] otlp_endpoint` is set (`replay.trace_spans` makes them, `replay.otlp` sends them).

The spans are made inside each append (cheap, no I/O) and queued for the SDK's batch thread, so a
slow or dead collector never holds a turn; `close` flushes what is queued, waiting at most the
configured timeout. Without an endpoint nothing here is made and no OpenTelemetry module loads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from app.version import VERSION
from engine.events import Event, LiveEvent

if TYPE_CHECKING:
    from engine.agent import Agent
    from engine.config import Config
    from replay.otlp import BatchSink


class LiveTelemetry:
    """One front end's trace sink, shared by the sessions it opens."""

    def __init__(self, config: Config) -> None:
        from replay.otlp import BatchSink

        settings = config.telemetry
        self._config = config
        self._sink: BatchSink = BatchSink(
            settings.traces_url(), timeout=settings.timeout, version=VERSION
        )

    @classmethod
    def of(cls, config: Config) -> LiveTelemetry | None:
        """The sink `config` asks for; None when it names no endpoint. Raises `OtelMissing`
        when it does and the `otel` extra is not installed."""
        return cls(config) if config.telemetry.otlp_endpoint else None

    def watch(self, agent: Agent) -> Callable[[], None]:
        """Send the spans of what `agent` does from now on; returns the function that stops."""
        from replay.trace_spans import TraceProjection, resolver_of

        settings = self._config.telemetry
        projection = TraceProjection(
            agent.session_id,
            resolver_of(self._config.models),
            capture_content=settings.capture_content,
            max_class=settings.effective_egress(),
            bound=agent.model.name,
        )
        sink = self._sink

        def follow(event: Event | LiveEvent) -> None:
            if isinstance(event, Event):
                finished = projection.apply(event)
                if finished:
                    sink.send(finished)

        return agent.subscribe(follow)

    def close(self) -> bool:
        """Flush what is queued (at most the configured timeout); whether all of it went."""
        return self._sink.close()
