"""A long stored session for the ACP load tests and the benchmark: `turns` turns of
read-then-answer as an agent on the scripted model stores them (eleven events a turn)."""

from __future__ import annotations

from pathlib import Path

from engine.events import (
    AssistantMessage,
    Event,
    ModelBind,
    Payload,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.message import ToolCall
from engine.store.sqlite.store import SQLiteStore

EVENTS_PER_TURN = 11


def conversation(turns: int) -> list[Payload]:
    """What an agent stores for `turns` turns of read-then-answer on the scripted model."""
    payloads: list[Payload] = [ModelBind(model="scripted", grant_epoch=1)]
    for turn in range(1, turns + 1):
        call = f"call_{turn}"
        payloads += [
            TurnStart(turn=turn),
            UserMessage(content=f"read notes/{turn}.md and tell me what it says"),
            StepStart(turn=turn, step=1),
            AssistantMessage(
                turn=turn,
                step=1,
                content=f"Reading `notes/{turn}.md`.",
                tool_calls=(ToolCall(call, "read_file", {"path": f"notes/{turn}.md"}),),
                model="scripted",
            ),
            ToolCallRecord(
                turn=turn, step=1, call_id=call, name="read_file", arguments={"path": "a"}
            ),
            ToolResultRecord(turn=turn, step=1, call_id=call, content="a line of notes\n" * 12),
            StepEnd(turn=turn, step=1),
            StepStart(turn=turn, step=2),
            AssistantMessage(
                turn=turn, step=2, content="## Result\n\nThe notes say: " + "words " * 30
            ),
            StepEnd(turn=turn, step=2),
            TurnEnd(turn=turn, reason="completed"),
        ]
    return payloads


async def store_session(db: Path, cwd: Path, turns: int) -> str:
    """A stored session of `turns` turns in `cwd`, its lease given back."""
    payloads = conversation(turns)
    events = [
        Event(seq=i, time=float(i), type=p.event_type, data=p) for i, p in enumerate(payloads)
    ]
    async with SQLiteStore(db) as store:
        info = await store.create(cwd=str(cwd), title=f"{turns} turns", model="scripted")
        for start in range(0, len(events), 5_000):
            await store.append(info.id, events[start : start + 5_000])
            await store.flush(info.id)
        await store.release(info.id)
    return info.id
