"""`trellis search QUERY`: the stored sessions' text, ranked, one hit per matching event.

Scoped as `trellis sessions` is: this workspace's sessions (or `--cwd`'s), every workspace's with
`--all`. A store whose events the index has not all seen (a store from before it, or left by a
process that crashed) is indexed first, once, with its progress on stderr.

Privacy: a hit shows what `trellis show` and an export without `--max-class` show, the stored
text. `--max-class` leaves out the hits whose text an export with that limit would redact: not
even their place is shown, since that a hidden text matched a word would tell of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TextIO

from app.session_options import UsageError, max_class_of, open_chosen_store
from engine.counts import counted
from engine.os_text import storable_os_text
from engine.privacy import PrivacyClass
from engine.redaction import RedactingLogFilter
from engine.store.chooser import Store
from engine.store.log_view import decode
from engine.store.search import SearchHit
from engine.store.search_query import parse_query
from replay.redaction import hidden_class

PAGE = 200
"""Hits read at a time while a privacy limit leaves some out."""


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(search(args))


async def search(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise UsageError(f"--limit must be 1 or more, got {args.limit}")
    max_class = max_class_of(args.max_class)
    parse_query(args.query)  # a query that cannot be read is said before any indexing
    cwd = None if args.all else storable_os_text(str((args.cwd or Path.cwd()).resolve()))
    async with await open_chosen_store(args) as store:
        if waiting := await store.unindexed():
            progress = Progress(waiting, sys.stderr)
            await store.update_index(progress)
            progress.finish()
        if max_class is None:
            hits = await store.search(args.query, cwd=cwd, limit=args.limit)
        else:
            hits = await _within(store, args.query, cwd, args.limit, max_class)
    if args.json:
        print(json.dumps([hit.record() for hit in hits], ensure_ascii=False))
        return 0
    if not hits:
        where = "" if cwd is None else f" in {cwd}'s sessions (use --all for every workspace)"
        print(f"no matches{where}")
        return 0
    bold = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    for hit in hits:
        print(hit_text(hit, bold=bold, workspace=cwd is None))
    return 0


async def _within(
    store: Store, query: str, cwd: str | None, limit: int, max_class: PrivacyClass
) -> list[SearchHit]:
    """The best `limit` hits whose text an export limited to `max_class` shows."""
    kept: list[SearchHit] = []
    offset = 0
    while len(kept) < limit:
        page = await store.search(query, cwd=cwd, limit=PAGE, offset=offset)
        kept += [hit for hit in page if shown_within(hit, max_class)]
        if len(page) < PAGE:
            break
        offset += PAGE
    return kept[:limit]


def shown_within(hit: SearchHit, max_class: PrivacyClass) -> bool:
    """Whether an export limited to `max_class` shows the hit's text (`replay.redaction`)."""
    (event,) = decode("search", hit.session_id, [(hit.seq, hit.time, hit.type, hit.data)])
    return hidden_class(event, max_class) is None


def hit_text(hit: SearchHit, *, bold: bool, workspace: bool) -> str:
    """Two lines: where the hit is, then its snippet with the matched words marked."""
    title = hit.title or "(untitled)"
    place = f"{hit.session_id[:12]}  turn {hit.turn}  seq {hit.seq}  {hit.kind}  {title}"
    if workspace:
        place += f"  {hit.cwd}"
    text = hit.snippet
    if bold:
        for a, b in reversed(hit.marks):
            text = f"{text[:a]}\033[1m{text[a:b]}\033[22m{text[b:]}"
    return f"{place}\n    {text}"


class Progress:
    """`indexing N events for search: 40%` on one line of a terminal, redrawn per batch; where
    stderr is not a terminal, one line before and one after."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total = total
        self.out = out
        self.live = out.isatty()
        self.head = f"indexing {counted(total, 'event')} for search"
        if not self.live:
            print(f"{self.head}...", file=out)

    def __call__(self, done: int) -> None:
        if self.live:
            share = min(100, done * 100 // max(self.total, 1))
            print(f"\r{self.head}: {share}%", end="", file=self.out, flush=True)

    def finish(self) -> None:
        print(f"\r{self.head}: done" if self.live else f"{self.head}: done", file=self.out)
