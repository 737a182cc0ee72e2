"""`trellis stats`: what the stored sessions used and cost (`engine.usage_stats`), as a table or
JSON. Checkpoints' disk use is `trellis checkpoints`'."""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

from engine.money import cost_text
from engine.paths import sessions_db_path
from engine.redaction import RedactingLogFilter
from engine.store.catalog import open_catalog
from engine.store.settings import chosen_settings
from engine.usage_stats import (
    GROUPINGS,
    TOKEN_PARTS,
    UsageStats,
    UsageTotal,
    parse_since,
    usage_stats,
)

_HEADINGS = ("sessions", "steps", "input", "cache read", "cache write", "output", "cost")


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(stats(args))


def options(stats: argparse.ArgumentParser) -> None:
    stats.add_argument(
        "--since",
        type=_since,
        default=None,
        metavar="DATE",
        help="only steps from DATE on (YYYY-MM-DD, or an ISO 8601 date and time; UTC)",
    )
    stats.add_argument(
        "--by", choices=GROUPINGS, default=None, help="a row per model, day or session"
    )
    stats.add_argument("--json", action="store_true", help="print one JSON object")


def _since(text: str) -> float:
    try:
        return parse_since(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


async def stats(args: argparse.Namespace) -> int:
    settings = await asyncio.to_thread(chosen_settings, args.store, Path.cwd())
    async with open_catalog(settings, sessions_db_path()) as catalog:
        rows = await catalog.step_rows(args.since)
    found = usage_stats(rows, args.by)
    if args.json:
        print(json.dumps(_record(found, args), ensure_ascii=False))
        return 0
    if not found.total.steps:
        print("no steps" + ("" if args.since is None else " since then"))
        return 0
    for line in stats_table(found, args.by):
        print(line)
    return 0


def _record(found: UsageStats, args: argparse.Namespace) -> dict[str, object]:
    return {
        "since": None
        if args.since is None
        else datetime.fromtimestamp(args.since, UTC).isoformat(),
        "by": args.by,
        "groups": [g.record() for g in found.groups],
        "total": found.total.record(),
    }


def stats_table(found: UsageStats, by: str | None) -> list[str]:
    """A header, a row per group, then the total, in aligned columns."""
    rows = [_cells(g) for g in found.groups]
    rows.append(_cells(found.total))
    header = (by or "", *_HEADINGS)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (c.rjust(w) for c, w in zip(cells[1:-1], widths[1:-1], strict=True))
        return "  ".join((first, *rest, cells[-1])).rstrip()

    return [line(header), *(line(r) for r in rows)]


def _cells(total: UsageTotal) -> tuple[str, ...]:
    tokens = (f"{total.tokens[part]:,}" for part in TOKEN_PARTS)
    cost = cost_text(total.cost) or "-"
    return (total.key, f"{len(total.sessions):,}", f"{total.steps:,}", *tokens, cost)
