"""The child of the crash test: writes two sessions, reports what it flushed, then waits to die.

Run as `python -m tests.store.crash_writer DB_PATH`; prints one JSON line once everything is flushed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from engine.events import ToolResultRecord
from engine.session import Session
from engine.store.sqlite.store import SQLiteStore
from tests.store.conftest import full_turn, inject, open_turn, step


async def main(path: Path) -> None:
    store = await SQLiteStore(path).open()
    mid_turn = Session((await store.create(cwd="/w")).id, store)
    full_turn(mid_turn)
    turn = open_turn(mid_turn)
    step(mid_turn, turn, calls=2, results=1)
    await mid_turn.flush()

    at_rest = Session((await store.create(cwd="/w")).id, store)
    full_turn(at_rest)
    inject(at_rest, "context injected while idle")
    await at_rest.flush()

    report = {
        "pid": os.getpid(),
        "sessions": {s.id: [[e.seq, e.type] for e in s.held] for s in (mid_turn, at_rest)},
    }
    # Appended and staged but never flushed: the kill may lose it.
    mid_turn.append(ToolResultRecord(turn=turn, step=1, call_id=f"t{turn}s1c1", content="late"))
    await store.append(mid_turn.id, mid_turn.held[-1:])
    print(json.dumps(report), flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
