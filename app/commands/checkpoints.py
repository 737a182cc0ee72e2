"""`trellis checkpoints`: each workspace's shadow repository, the disk it takes and the sessions
it keeps checkpoints of. A deleted session's are pruned with it (`delete_session`)."""

from __future__ import annotations

import argparse
import asyncio

from engine.checkpoints.sessions import holdings
from engine.counts import counted
from engine.os_text import storable_os_text
from engine.paths import data_dir
from engine.redaction import RedactingLogFilter


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(checkpoints(args))


UNITS = ("B", "KB", "MB", "GB", "TB")


def size_text(size: int) -> str:
    """Bytes as people read them: `812 B`, `1.4 MB` (powers of 1024)."""
    amount = float(size)
    for unit in UNITS:
        if amount < 1024 or unit == UNITS[-1]:
            return f"{size} B" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    raise AssertionError("unreachable: the last unit returns")


async def checkpoints(args: argparse.Namespace) -> int:
    found = await holdings(data_dir())
    if not found:
        print("no checkpoints ([checkpoints] enabled = false turns them off)")
        return 0
    for held in found:
        usage = held.usage
        workspace = storable_os_text(usage.workspace) if usage.workspace else "(workspace unknown)"
        print(f"{workspace}  {size_text(usage.bytes)}  {usage.shadow_dir}")
        if not held.sessions:
            print("  no session's checkpoints (pruned)")
        for session_id, count in held.sessions:
            print(f"  {session_id}  {counted(count, 'checkpoint')}")
    total = sum(h.usage.bytes for h in found)
    print(f"total {size_text(total)} in {counted(len(found), 'workspace')}")
    return 0
