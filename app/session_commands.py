"""The stored-session commands: `show`, `export`, `fork` and `delete` (and `sessions --json`).

Each takes an id or a unique id prefix; an unknown or ambiguous id, a bad format or class and a bad
fork point reach `main` as errors and end as one line on stderr with exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from engine.counts import counted
from engine.errors import TrellisError
from engine.privacy import PrivacyClass
from engine.store.chooser import Store, open_store
from engine.store.settings import chosen_settings


class UsageError(TrellisError):
    """A command line the commands below cannot act on."""


def max_class_of(text: str | None) -> PrivacyClass | None:
    if text is None:
        return None
    try:
        return PrivacyClass.parse(text)
    except ValueError as exc:
        raise UsageError(f"--max-class: {exc}") from None


async def open_chosen_store(args: argparse.Namespace) -> Store:
    """`--store URL`, else the configured store seen from the current directory
    (engine.store.settings)."""
    return open_store(await asyncio.to_thread(chosen_settings, args.store, Path.cwd()))


async def show(args: argparse.Namespace) -> int:
    from app.transcript_text import ANSI, PLAIN, transcript_text
    from replay.transcript import transcript_of
    from replay.wording import UNTITLED

    async with await open_chosen_store(args) as store:
        info = await store.resolve(args.id)
        events = (await store.inspect(info.id)).events
    if args.at is not None:
        last = events[-1].seq if events else -1
        if not 0 <= args.at <= last:
            raise UsageError(f"--at {args.at}: session {info.id} has seqs 0..{last}")
        events = events[: args.at + 1]
    style = ANSI if sys.stdout.isatty() and "NO_COLOR" not in os.environ else PLAIN
    title = info.title or UNTITLED
    sys.stdout.write(f"{style.heading}{title}{style.reset}  {style.dim}{info.id}{style.reset}\n")
    sys.stdout.write(transcript_text(transcript_of(events).entries, style))
    return 0


async def export(args: argparse.Namespace) -> int:
    from replay.export import FORMATS
    from replay.export import export as render

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
    from app.session_export import write_export

    output: Path = args.output
    await write_export(info, events, args.format, output, max_class=max_class, overwrite=True)
    print(f"exported {info.id} to {output}", file=sys.stderr)
    return 0


OTLP = "otlp"


async def export_otlp(args: argparse.Namespace) -> int:
    """The session's spans sent to a collector (`--endpoint`, else `[telemetry] otlp_endpoint`),
    with the configuration's content setting and class (`--max-class` overrides the class)."""
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


async def fork(args: argparse.Namespace) -> int:
    async with await open_chosen_store(args) as store:
        info = await store.resolve(args.id)
        forked = await store.fork(info.id, info.event_count if args.at is None else args.at)
    print(forked.id)
    return 0


async def delete(args: argparse.Namespace) -> int:
    async with await open_chosen_store(args) as store:
        info = await store.resolve(args.id)
        if not args.yes:
            if not sys.stdin.isatty():
                raise UsageError(f"not deleting {info.id} without a terminal: pass --yes")
            title = info.title or "untitled"
            question = f"Delete session {info.id} ({title}, {counted(info.turns, 'turn')})? [y/N] "
            answer = await asyncio.to_thread(input, question)
            if answer.strip().lower() not in ("y", "yes"):
                print("nothing deleted", file=sys.stderr)
                return 1
        from engine.checkpoints.sessions import delete_session
        from engine.paths import data_dir

        unpruned = await delete_session(store, info.id, data_dir())
    print(f"deleted {info.id}", file=sys.stderr)
    if unpruned is not None:
        print(f"trellis: {unpruned}", file=sys.stderr)
    return 0
