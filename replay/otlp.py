"""`SpanRecord`s sent to a collector over OTLP/HTTP with the official OpenTelemetry SDK and
exporter (the `otel` extra). They are imported when a sink is made, never at start: a session
that sends no traces never loads them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from engine.errors import TrellisError
from replay.trace_spans import SpanRecord

if TYPE_CHECKING:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

INSTALL_HINT = "pip install 'trellis[otel]'"


class OtelMissing(TrellisError):
    """Traces are configured or asked for, but the OpenTelemetry packages are not installed."""

    def __init__(self, missing: str) -> None:
        super().__init__(
            f"sending traces needs the OpenTelemetry SDK and OTLP exporter ({missing} is not "
            f"installed): {INSTALL_HINT}"
        )


class OtlpExportFailed(TrellisError):
    """The collector did not take the spans (unreachable, refused, or too slow)."""


class SpanEncoder:
    """`SpanRecord` to the SDK's `ReadableSpan`, all under one resource (`service.name` trellis)."""

    def __init__(self, version: str) -> None:
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        except ImportError as exc:
            raise OtelMissing(exc.name or "opentelemetry-sdk") from None
        self._resource: Resource = Resource.create(
            {"service.name": "trellis", "service.version": version}
        )
        self._scope: InstrumentationScope = InstrumentationScope("trellis", version)

    def span(self, record: SpanRecord) -> ReadableSpan:
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        sampled = TraceFlags(TraceFlags.SAMPLED)
        context = SpanContext(record.trace_id, record.span_id, is_remote=False, trace_flags=sampled)
        parent = None
        if record.parent_id is not None:
            parent = SpanContext(
                record.trace_id, record.parent_id, is_remote=False, trace_flags=sampled
            )
        attributes = dict(record.attributes)
        status = Status(StatusCode.UNSET)  # the conventions leave a success unset
        if record.error is not None:
            attributes["error.type"] = record.error
            status = Status(StatusCode.ERROR, record.error)
        return ReadableSpan(
            name=record.name,
            context=context,
            parent=parent,
            resource=self._resource,
            attributes=attributes,
            kind=SpanKind.CLIENT if record.kind == "client" else SpanKind.INTERNAL,
            status=status,
            start_time=record.start_ns,
            end_time=record.end_ns,
            instrumentation_scope=self._scope,
        )


def _exporter(url: str, timeout: float) -> OTLPSpanExporter:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise OtelMissing(exc.name or "opentelemetry-exporter-otlp-proto-http") from None
    return OTLPSpanExporter(endpoint=url, timeout=timeout)


def send_spans(records: Iterable[SpanRecord], url: str, *, timeout: float, version: str) -> int:
    """Post the spans to `url` now, in one request; returns how many. Raises
    `OtlpExportFailed` when the collector did not take them within `timeout` seconds."""
    encoder = SpanEncoder(version)
    spans = [encoder.span(record) for record in records]
    if not spans:
        return 0
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = _exporter(url, timeout)
    try:
        result = exporter.export(spans)
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
    if result is not SpanExportResult.SUCCESS:
        raise OtlpExportFailed(
            f"{url} did not take the {len(spans)} spans within {timeout:g} s "
            "(is a collector listening there?)"
        )
    return len(spans)


class BatchSink:
    """Spans queued for the SDK's `BatchSpanProcessor`, whose thread sends them: `send` only
    queues (a full queue drops, a dead collector costs the turn nothing), `close` flushes what is
    queued, waiting at most `timeout` seconds."""

    def __init__(self, url: str, *, timeout: float, version: str) -> None:
        self._encoder = SpanEncoder(version)
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        exporter = _exporter(url, timeout)
        failed = self._failed = [0]

        class Counted(SpanExporter):
            """The exporter, counting the spans the collector did not take (the processor
            only logs a failure)."""

            def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
                result = exporter.export(spans)
                if result is not SpanExportResult.SUCCESS:
                    failed[0] += len(spans)
                return result

            def shutdown(self) -> None:
                exporter.shutdown()  # type: ignore[no-untyped-call]  # unannotated in the SDK

        self._timeout = timeout
        self._processor: BatchSpanProcessor = BatchSpanProcessor(
            Counted(), export_timeout_millis=timeout * 1000
        )

    def send(self, records: Iterable[SpanRecord]) -> None:
        for record in records:
            self._processor.on_end(self._encoder.span(record))

    def close(self) -> bool:
        """Whether every span was taken by the collector (those queued are flushed first, within
        the timeout); the sink takes no more spans after."""
        flushed = self._processor.force_flush(timeout_millis=int(self._timeout * 1000))
        self._processor.shutdown()  # type: ignore[no-untyped-call]  # unannotated in the SDK
        return flushed and not self._failed[0]
