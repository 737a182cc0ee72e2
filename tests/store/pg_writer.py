"""A writer process on a PostgreSQL store, driven line by line from its stdin.

Run as `python -m tests.store.pg_writer URL SCHEMA TTL` (the password in TRELLIS_TEST_PG_PASSWORD).
It creates a session, stores a turn and an open one, and prints one JSON line (pid, id, the events
flushed); then for each line `turn` on stdin it appends and flushes a whole turn (closing the open
one first), for `stage` it appends one event without flushing, for `release` it gives the
session's lease back, and prints one JSON line: `{"ok":
[seqs]}` or `{"error": message}`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from engine.events import StepEnd, TurnEnd, UserMessage
from engine.session import Session
from engine.store.errors import StoreError
from engine.store.postgres.store import PostgresStore
from tests.pg_cluster import PASSWORD_ENV
from tests.store.conftest import full_turn, open_turn, step


def _close_open_turn(session: Session) -> None:
    state = session.state
    if state.open_turn is None:
        return
    if state.open_step is not None:
        session.append(StepEnd(turn=state.open_turn, step=state.open_step))
    session.append(TurnEnd(turn=state.open_turn, reason="completed"))


async def main(url: str, schema: str, ttl: float) -> None:
    store = PostgresStore(url, password=os.environ[PASSWORD_ENV], schema=schema, lease_ttl=ttl)
    await store.open()
    session = Session((await store.create(cwd="/w")).id, store)
    full_turn(session)
    step(session, open_turn(session), calls=0)
    await session.flush()
    report = {
        "pid": os.getpid(),
        "id": session.id,
        "seqs": [e.seq for e in await session.read(0, session.next_seq)],
    }
    print(json.dumps(report), flush=True)
    while line := (await asyncio.to_thread(sys.stdin.readline)).strip():
        try:
            if line == "release":
                await store.release(session.id)
                print(json.dumps({"ok": []}), flush=True)
                continue
            if line == "stage":
                event = session.append(UserMessage(content="staged, never flushed"))
                await store.append(session.id, [event])
                print(json.dumps({"ok": [event.seq]}), flush=True)
                continue
            start = session.next_seq
            _close_open_turn(session)
            full_turn(session, "from the writer")
            await session.flush()
            print(json.dumps({"ok": list(range(start, session.next_seq))}), flush=True)
        except StoreError as exc:
            print(json.dumps({"error": str(exc)}), flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
