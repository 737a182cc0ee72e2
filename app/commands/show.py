"""`trellis show ID [--at SEQ]`: a stored session's transcript, as the console shows it."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from app.session_options import UsageError, open_chosen_store
from app.transcript_text import ANSI, PLAIN, transcript_text
from engine.redaction import RedactingLogFilter
from replay.transcript import transcript_of
from replay.wording import UNTITLED


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(show(args))


async def show(args: argparse.Namespace) -> int:
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
