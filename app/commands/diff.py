"""`trellis diff ID [--turn N]`: the patch of a session's turns, read from its log alone.

The `turn/changes` records hold each file's unified diff, so the patch needs no checkpoint and
prints the same on every host the log reaches (a PostgreSQL store's included). A file with no
diff (binary, over the cap, a secret) gets one `#` line saying so; `patch` and `git apply` skip
such lines.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable, Iterator, Sequence

from app.session_options import UsageError, open_chosen_store
from engine.events import Event, SessionRewind, TurnChanges, TurnStart, WorkspaceFileChange
from engine.redaction import RedactingLogFilter
from engine.rewind_report import files_summary
from replay.file_diff import file_counts, withheld_note


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(diff(args))


def file_patch(change: WorkspaceFileChange) -> str:
    """The file's unified diff, or a `#` line saying why there is none."""
    if change.diff is not None:
        return change.diff if change.diff.endswith("\n") else change.diff + "\n"
    counts = file_counts(change)
    counted = f" ({counts})" if counts else ""
    return f"# {change.path}: {change.status}, {withheld_note(change)}{counted}\n"


def _rewind_line(data: SessionRewind) -> str | None:
    if data.code_after is None:
        return None
    what = (
        "undo of a rewind" if data.undoes is not None else f"rewind to before turn {data.to_turn}"
    )
    parts = [f"wrote {', '.join(data.restored)}" if data.restored else ""]
    parts.append(f"removed {', '.join(data.deleted)}" if data.deleted else "")
    parts.append(f"kept {', '.join(data.kept)}" if data.kept else "")
    said = "; ".join(p for p in parts if p) or "no file written"
    return f"# {what} (its files come from checkpoints, no diff): {said}\n"


def session_patch(events: Iterable[Event], turn: int | None = None) -> Iterator[str]:
    """The patch, in log order: each turn's files under a `# turn N` line, and with no `turn`
    the code rewinds between them."""
    for event in events:
        data = event.data
        match data:  # exact: a payload class is never subclassed (see `Payload`)
            case TurnChanges() if turn is None or data.turn == turn:
                yield f"# turn {data.turn}: {files_summary(data.files)}\n"
                for change in data.files:
                    yield file_patch(change)
            case SessionRewind() if turn is None:
                line = _rewind_line(data)
                if line is not None:
                    yield line


def _turns(events: Sequence[Event]) -> list[int]:
    return [e.data.turn for e in events if type(e.data) is TurnStart]


async def diff(args: argparse.Namespace) -> int:
    async with await open_chosen_store(args) as store:
        info = await store.resolve(args.id)
        events = (await store.inspect(info.id)).events
    turns = _turns(events)
    if args.turn is not None and args.turn not in turns:
        listed = ", ".join(str(t) for t in turns) or "none"
        raise UsageError(f"--turn {args.turn}: session {info.id} has turns {listed}")
    patch = list(session_patch(events, args.turn))
    if not patch:
        which = f"turn {args.turn}" if args.turn is not None else f"session {info.id}"
        print(f"{which} changed no file (or kept no checkpoints)", file=sys.stderr)
        return 0
    sys.stdout.writelines(patch)
    return 0
