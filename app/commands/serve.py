"""`trellis serve`: ACP over WebSocket and streamable HTTP (`app.acp.serve`)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from app.acp.serve import serve
from app.config_report import reported
from app.exit_codes import EXIT_OK, EXIT_USAGE
from engine.config import load_config_report
from engine.redaction import RedactingLogFilter
from engine.store.settings import chosen_settings


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(_serve(args, log_secrets))


async def _serve(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    """`trellis serve`: the servers run until stopped; a bad port, config or store is one line."""
    cwd = Path.cwd().resolve()
    for option, value in (("--port", args.port), ("--http-port", args.http_port)):
        if value is not None and not 0 <= value <= 65535:
            print(f"trellis: {option} must be 0 to 65535, got {value}", file=sys.stderr)
            return EXIT_USAGE
    loaded = await asyncio.to_thread(load_config_report, cwd, trust_project=args.trust_project)
    config = reported(loaded, log_secrets)
    await serve(
        config.serve,
        store=await asyncio.to_thread(chosen_settings, args.store, cwd),
        started_in=cwd,
        host=args.host,
        port=args.port,
        http_port=args.http_port,
        trust_project=args.trust_project,
        log_secrets=log_secrets,
    )
    return EXIT_OK
