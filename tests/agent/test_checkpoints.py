"""The durability checkpoints of a turn, and which of them share one flush (issue 10).

docs/ARCHITECTURE.md, the store: flush before a model request, before a tool runs, at step and turn
end. A step's end is always followed, with no await between, by the next step's flush before its
model request or by the turn end's flush; so it rides on that one, and a turn with one tool call
costs four flush transactions instead of six.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from engine.events import Event
from engine.gateway.scripted import Reply
from engine.store.sqlite.store import SQLiteStore
from engine.tools import ToolRegistry
from tests.agent.conftest import FixedTool, FlakyStore, MakeAgent, call, stored_log


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The event types of each batch the store is given, one batch per flush."""
    seen: list[list[str]] = []
    append = SQLiteStore.append

    async def recording(self: SQLiteStore, session_id: str, events: Sequence[Event]) -> None:
        seen.append([e.type for e in events])
        await append(self, session_id, events)

    monkeypatch.setattr(SQLiteStore, "append", recording)
    return seen


async def test_a_turn_with_one_tool_call_flushes_four_times(
    make_agent: MakeAgent, store: FlakyStore, batches: list[list[str]]
) -> None:
    agent = await make_agent(
        [Reply(tool_calls=[call("probe")]), Reply(text="done")],
        tools=ToolRegistry([FixedTool("probe")]),
    )
    agent.send("go")
    await agent.when_idle()
    turn = batches[next(i for i, b in enumerate(batches) if "turn/start" in b) :]
    assert [b[-1] for b in turn] == ["step/start", "tool/call", "step/start", "turn/end"]
    assert turn[2] == ["tool/result", "step/end", "step/start"]
    assert turn[3] == ["assistant/message", "step/end", "turn/end"]
    log = await stored_log(store, agent.session_id)
    assert [e.seq for e in log] == list(range(len(log)))


async def test_a_turn_outcome_is_given_only_once_its_end_is_stored(
    make_agent: MakeAgent, store: FlakyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ACP prompt answers from the outcome, and a client then reads the store: the turn's end
    must already be committed (it once was flushed just after the outcome was handed out)."""
    committed: list[str] = []
    append = SQLiteStore.append

    async def recording(self: SQLiteStore, session_id: str, events: Sequence[Event]) -> None:
        await asyncio.sleep(0.05)  # a busy disk: the commit takes a while
        await append(self, session_id, events)
        committed.extend(e.type for e in events)

    monkeypatch.setattr(SQLiteStore, "append", recording)
    agent = await make_agent([Reply(text="done")])
    outcome = await agent.send("go")
    assert outcome is not None
    assert "turn/end" in committed
