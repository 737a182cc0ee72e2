"""`trellis sessions`: the stored sessions, newest first, as a table or JSON; read from the sessions
table alone, without the event log."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from app.exit_codes import EXIT_OK, EXIT_USAGE
from app.session_rows import session_table
from engine.os_text import storable_os_text
from engine.paths import sessions_db_path
from engine.redaction import RedactingLogFilter
from engine.store.catalog import open_catalog
from engine.store.settings import chosen_settings


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(_sessions(args))


async def _sessions(args: argparse.Namespace) -> int:
    if args.limit < 1:
        print(f"trellis: --limit must be 1 or more, got {args.limit}", file=sys.stderr)
        return EXIT_USAGE
    # stored as the session's workspace is: a name that is not UTF-8 escaped (engine.os_text)
    cwd = None if args.all else storable_os_text(str((args.cwd or Path.cwd()).resolve()))
    settings = await asyncio.to_thread(chosen_settings, args.store, Path.cwd())
    async with open_catalog(settings, sessions_db_path()) as catalog:
        page = await catalog.list(cwd=cwd, limit=args.limit)
    if args.json:
        print(json.dumps([info.record() for info in page.sessions], ensure_ascii=False))
        return EXIT_OK
    if not page.sessions:
        print("no sessions" + ("" if cwd is None else f" in {cwd} (use --all for every workspace)"))
        return EXIT_OK
    # a header row even when piped, as `ps` prints one: scripts read `--json`
    for line in session_table(page.sessions, workspaces=cwd is None):
        print(line)
    return EXIT_OK
