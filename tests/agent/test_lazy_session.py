"""A new session enters the store with its first `user/message` (issue 9): opening one and leaving
it without a word stores nothing; what came before the first message is stored with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.context.areas import NoticeArea
from engine.errors import TrellisError
from engine.gateway.scripted import Reply
from tests.agent.harness import opened


async def test_a_session_left_without_a_message_stores_nothing(tmp_path: Path) -> None:
    async with opened(tmp_path) as run:
        run.agent.pin("short answers")
        await run.agent.when_idle()
        with pytest.raises(TrellisError, match="not stored yet"):
            await run.agent.fork()
        assert not run.agent.stored
    async with opened(tmp_path) as again:  # disposed above: still nothing stored
        assert (await again.store.list()).sessions == ()


async def test_what_came_before_the_first_message_is_stored_with_it(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="ok")]) as run:
        run.agent.pin("short answers")
        run.agent.register_area(NoticeArea("deploys are frozen"))
        await run.run("hello")
        events = await run.events()
        forked = await run.agent.fork()
        (info,) = [s for s in (await run.store.list()).sessions if s.id == run.agent.session_id]
    assert [e.model_dump() for e in events] == [e.model_dump() for e in run.agent.log]
    assert [e.type for e in events[:3]] == ["model/bind", "pin/add", "area/register"]
    assert (info.cwd, info.event_count) == (str(run.workspace.resolve()), len(events))
    assert forked != run.agent.session_id
