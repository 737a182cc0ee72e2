"""`trellis export ID --format md|json|html|otlp`: a stored session as Markdown, JSON or HTML (to
stdout or a file), or its spans sent to an OpenTelemetry collector.

An unknown or ambiguous id, a bad format or class reach `main` as errors and end as one line on
stderr with exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from app.session_export import write_export
from app.session_options import UsageError, max_class_of, open_chosen_store
from engine.counts import counted
from engine.redaction import RedactingLogFilter
from replay.export import FORMATS
from replay.export import export as render


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(export(args))


async def export(args: argparse.Namespace) -> int:
    if args.format == OTLP:
        return await export_otlp(args)
    if args.format not in FORMATS:
        raise UsageError(f"--format {args.format!r}: expected one of {', '.join([*FORMATS, OTLP])}")
    if args.endpoint is not None:
        raise UsageError("--endpoint: only --format otlp sends to an endpoint")
    max_class = max_class_of(args.max_class)
    async with await open_chosen_store(args) as store:
        info = await store.resolve(args.id)
        events = (await store.inspect(info.id)).events
    if args.output is None:
        sys.stdout.write(render(info, events, args.format, max_class=max_class))
        return 0
    output: Path = args.output
    await write_export(info, events, args.format, output, max_class=max_class, overwrite=True)
    print(f"exported {info.id} to {output}", file=sys.stderr)
    return 0


OTLP = "otlp"


async def export_otlp(args: argparse.Namespace) -> int:
    """The session's spans sent to a collector (`--endpoint`, else `[telemetry] otlp_endpoint`),
    with the configuration's content setting and class (`--max-class` overrides the class).
    Its imports are here, not at the module's top: the spans are built from the agent's views,
    about 110 ms to load, which the other formats never use."""
    from pydantic import ValidationError

    from app.version import VERSION
    from engine.config import TelemetryConfig, load_config_report
    from engine.events import ModelBind
    from engine.gateway.base import GatewayType
    from replay.otlp import send_spans
    from replay.trace_spans import resolver_of, spans_of

    if args.output is not None:
        raise UsageError("-o: --format otlp sends the traces to an endpoint, not to a file")
    config = (await asyncio.to_thread(load_config_report, Path.cwd(), trust_project=False)).config
    settings = config.telemetry
    if args.endpoint is not None:
        try:
            settings = TelemetryConfig.model_validate(
                {**settings.model_dump(exclude_unset=True), "otlp_endpoint": args.endpoint}
            )
        except ValidationError as exc:
            raise UsageError(f"--endpoint {args.endpoint!r}: {exc.errors()[0]['msg']}") from None
    if not settings.otlp_endpoint:
        raise UsageError("--format otlp: give --endpoint URL or set [telemetry] otlp_endpoint")
    max_class = max_class_of(args.max_class) or settings.effective_egress()
    async with await open_chosen_store(args) as store:
        info = await store.resolve(args.id)
        events = (await store.inspect(info.id)).events
    binds = [e.data.model for e in events if type(e.data) is ModelBind]
    entry = config.models.get(binds[-1]) if binds else None
    spans = spans_of(
        events,
        info.id,
        resolver_of(config.models),
        capture_content=settings.capture_content,
        max_class=max_class,
        gateway_type=GatewayType(entry.provider) if entry is not None else GatewayType.scripted,
    )
    url = settings.traces_url()
    sent = await asyncio.to_thread(
        send_spans, spans, url, timeout=settings.timeout, version=VERSION
    )
    print(f"sent {counted(sent, 'span')} of {info.id} to {url}", file=sys.stderr)
    return 0
