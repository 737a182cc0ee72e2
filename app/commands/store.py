"""`trellis store copy --to URL`: every SQLite session copied into a PostgreSQL store, verified."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from app.exit_codes import EXIT_OK, EXIT_USAGE
from engine.counts import counted
from engine.paths import sessions_db_path
from engine.redaction import RedactingLogFilter
from engine.store.copy import copy_sessions
from engine.store.postgres.store import PostgresStore
from engine.store.settings import url_settings
from engine.store.sqlite.store import SQLiteStore


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(_store_copy(args))


async def _store_copy(args: argparse.Namespace) -> int:
    """`trellis store copy --to URL`: one line per session, then the totals."""
    source: Path = args.source or sessions_db_path()
    if not await asyncio.to_thread(source.is_file):
        print(f"trellis: --from {source}: no such SQLite file", file=sys.stderr)
        return EXIT_USAGE
    target = await asyncio.to_thread(url_settings, args.to, "--to")
    assert target.url is not None
    copied = skipped = events = 0
    async with (
        SQLiteStore(source) as sqlite,
        PostgresStore(target.url, password=target.password()) as postgres,
    ):
        async for session in copy_sessions(sqlite, postgres):
            verb = "already there" if session.skipped else "copied"
            print(
                f"{verb} {session.id}: {counted(session.events, 'event')}, last seq {session.last_seq}"
            )
            skipped += session.skipped
            copied += not session.skipped
            events += session.events
    print(
        f"{counted(copied, 'session')} copied, {skipped} already there, "
        f"{counted(events, 'event')} verified "
        f"in {target.shown}",
        file=sys.stderr,
    )
    return EXIT_OK
