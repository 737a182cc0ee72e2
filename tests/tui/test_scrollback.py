"""`Scrollback`: a stored session's pages read by range both ways around the live transcript; the
entries held always read as a run of the whole log, and `keep_around` drops the far pages."""

from __future__ import annotations

from pathlib import Path

from app.tui.scrollback import Scrollback, tail
from engine.store.sqlite.store import SQLiteStore
from replay.transcript import transcript_of
from tests.tui.test_long_session import stored_turns


async def test_pages_read_older_and_newer_hold_a_run_of_the_whole_log(
    workspace: Path, data: Path
) -> None:
    session_id = await stored_turns(data, workspace, 60)
    async with SQLiteStore(data / "sessions.sqlite") as store:
        whole = [entry.key for entry in transcript_of(await store.read(session_id)).entries]
        shown = await tail(store, session_id)
        live = transcript_of(shown)
        held = Scrollback(live, store, session_id, end=shown[0].seq, turns=7)

        def run() -> list[str]:
            keys = [entry.key for entry in held.entries]
            start = whole.index(keys[0])
            assert keys == whole[start : start + len(keys)], "a contiguous run of the log"
            assert held.between(0, held.count) == held.entries
            assert [held.index(key) for key in keys] == list(range(len(keys)))
            return keys

        sizes = []
        while await held.older():
            keys = run()
            held.keep_around(keys[0], keys[10])  # the view mounts the first entries
            sizes.append(len(held.pages))
        assert held.at_session_start
        assert run()[0] == "turn:1"
        # the one or two pages the view mounts from, and one spare below: the rest were dropped
        assert max(sizes) <= 3
        assert not held.joined
        assert held.live.get(whole[-1]) is not None
        while await held.newer():
            keys = run()
            held.keep_around(keys[-10], keys[-1])  # the view mounts the last entries
            assert len(held.pages) <= 3
        assert held.joined
        assert run()[-len(live.entries) :] == whole[-len(live.entries) :]
        await held.first()
        assert run()[0] == "turn:1"
        assert len(held.pages) == 1
        held.last()
        assert run() == [entry.key for entry in live.entries]
