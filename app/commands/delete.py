"""`trellis delete ID [--yes]`: a stored session deleted (asked first on a terminal), with the
checkpoints kept for it pruned."""

from __future__ import annotations

import argparse
import asyncio
import sys

from app.session_options import UsageError, open_chosen_store
from engine.checkpoints.sessions import delete_session
from engine.counts import counted
from engine.paths import data_dir
from engine.redaction import RedactingLogFilter


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(delete(args))


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
        unpruned = await delete_session(store, info.id, data_dir())
    print(f"deleted {info.id}", file=sys.stderr)
    if unpruned is not None:
        print(f"trellis: {unpruned}", file=sys.stderr)
    return 0
