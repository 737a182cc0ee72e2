"""`trellis fork ID [--at SEQ]`: a copy of a stored session up to a point; prints the new id."""

from __future__ import annotations

import argparse
import asyncio

from app.session_options import open_chosen_store
from engine.redaction import RedactingLogFilter


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(fork(args))


async def fork(args: argparse.Namespace) -> int:
    async with await open_chosen_store(args) as store:
        info = await store.resolve(args.id)
        forked = await store.fork(info.id, info.event_count if args.at is None else args.at)
    print(forked.id)
    return 0
