"""`trellis acp`: ACP over stdio (`app.acp.stdio`), for editors that launch agents."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from app.acp.core import AcpOptions
from app.acp.stdio import protect_stdout, serve_stdio
from app.config_report import reported
from app.exit_codes import EXIT_OK, EXIT_USAGE
from engine.config import load_config_report
from engine.os_text import storable_os_text
from engine.redaction import RedactingLogFilter
from engine.store.settings import chosen_settings


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(_acp(args, log_secrets))


async def _acp(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    """`trellis acp`: ACP over stdio (`app.acp.stdio`); stdout carries nothing else."""
    here = Path.cwd().resolve()
    roots = [root.resolve() for root in args.root] or [here]
    for root in roots:
        if not root.is_dir():
            print(
                f"trellis: --root {storable_os_text(str(root))} is not a directory", file=sys.stderr
            )
            return EXIT_USAGE
    # a bad config or store is reported before the protocol starts, as one line on stderr
    loaded = await asyncio.to_thread(load_config_report, here, trust_project=args.trust_project)
    reported(loaded, log_secrets)
    options = AcpOptions(
        store=await asyncio.to_thread(chosen_settings, args.store, here),
        roots=roots,
        model=args.model,
        script=args.script,
        trust_project=args.trust_project,
    )
    protocol = protect_stdout()
    await serve_stdio(options, sys.stdin.buffer, protocol)
    return EXIT_OK
