"""The transcript fed live equals the transcript rebuilt from SQLite, scenario by scenario."""

from __future__ import annotations

from typing import TypeVar

import pytest

from replay.transcript import (
    AreaEntry,
    AssistantEntry,
    CompactEntry,
    ContextEntry,
    ErrorEntry,
    GcEntry,
    ModelEntry,
    RetryEntry,
    ToolEntry,
    TranscriptEntry,
    TurnEntry,
    UserEntry,
    transcript_of,
)
from tests.agent.conftest import FlakyStore, MakeAgent
from tests.replay.scenarios import SCENARIOS, SUBTASK_GOAL, Played

E = TypeVar("E", bound=TranscriptEntry)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_live_transcript_equals_the_stored_one(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await SCENARIOS[name](make_agent, store)
    live = transcript_of(played.live)
    rebuilt = transcript_of(played.stored)
    assert live.durable_entries() == rebuilt.entries
    assert rebuilt.durable_entries() == rebuilt.entries


def _of(played: Played, kind: type[E]) -> list[E]:
    return [e for e in transcript_of(played.stored).entries if isinstance(e, kind)]


async def test_a_tool_cancelled_mid_run_and_its_turn_say_so(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await SCENARIOS["cancel_mid_tool"](make_agent, store)
    (tool,) = _of(played, ToolEntry)
    assert (tool.status, tool.is_error) == ("cancelled", True)
    (turn,) = _of(played, TurnEntry)
    assert (turn.status, turn.reason, turn.repaired) == ("ended", "cancelled", False)


async def test_a_crashed_turn_is_marked_repaired_and_its_open_call_closed(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await SCENARIOS["crash_repaired"](make_agent, store)
    turns = _of(played, TurnEntry)
    assert [(t.reason, t.repaired) for t in turns] == [
        ("completed", False),
        ("interrupted", True),
        ("completed", False),
    ]
    assert [t.status for t in _of(played, ToolEntry)] == ["done", "done", "error"]


async def test_injected_context_is_never_the_users_words(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await SCENARIOS["inject"](make_agent, store)
    assert [(c.heading, c.content) for c in _of(played, ContextEntry)] == [
        ("plugin: notes", "idle note"),
        ("ci", "in-turn note"),
    ]
    assert [u.content for u in _of(played, UserEntry)] == ["work"]


async def test_retries_are_entries_and_the_withdrawn_text_is_gone(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await SCENARIOS["retries"](make_agent, store)
    live = transcript_of(played.live)
    assert [(r.attempt, r.reason) for r in live.entries if isinstance(r, RetryEntry)] == [
        (1, "rate limited"),
        (2, "bad gateway"),
    ]
    assert [a.content for a in live.entries if isinstance(a, AssistantEntry)] == ["made it"]


async def test_a_model_error_is_reported_live_only(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await SCENARIOS["model_error"](make_agent, store)
    live = transcript_of(played.live)
    assert [(e.turn, e.message) for e in live.entries if isinstance(e, ErrorEntry)] == [(1, "boom")]
    (reply,) = _of(played, AssistantEntry)
    assert (reply.content, reply.finish) == ("par", "error")


async def test_areas_collections_and_compaction_are_entries(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await SCENARIOS["subtask"](make_agent, store)
    (render,) = _of(played, AreaEntry)
    assert render.area == "subtask#1"
    (gc,) = _of(played, GcEntry)
    assert gc.areas == ("subtask#1",)
    assert [m.content for m in gc.promoted] == [f"Subtask {SUBTASK_GOAL}: hi"]
    compacted = await SCENARIOS["compaction"](make_agent, store)
    (marker,) = _of(compacted, CompactEntry)
    assert (marker.groups, marker.done, marker.carried) == (2, True, (4, 5))
    assert marker.summary.endswith("the gist")


async def test_a_model_switch_shows_both_models(make_agent: MakeAgent, store: FlakyStore) -> None:
    played = await SCENARIOS["model_switch"](make_agent, store)
    assert [m.model for m in _of(played, ModelEntry)] == ["remote", "local"]
    assert [a.model for a in _of(played, AssistantEntry)] == ["remote-model", "local"]
