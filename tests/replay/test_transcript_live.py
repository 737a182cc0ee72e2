"""The transcript fed live equals the transcript rebuilt from SQLite, scenario by scenario."""

from __future__ import annotations

from typing import TypeVar

import pytest

from replay.export import export
from replay.player import Player
from replay.transcript import (
    CANCELLED_RESULT,
    AreaEntry,
    AssistantEntry,
    CompactEntry,
    ContextEntry,
    ErrorEntry,
    GcEntry,
    ModelEntry,
    RetryEntry,
    ToolEntry,
    Transcript,
    TranscriptEntry,
    TurnEndEntry,
    TurnEntry,
    UserEntry,
    transcript_of,
)
from tests.agent.conftest import FlakyStore, MakeAgent
from tests.replay.live_scenarios import NAMES, Played, play

E = TypeVar("E", bound=TranscriptEntry)


@pytest.mark.parametrize("name", NAMES)
async def test_live_transcript_equals_the_stored_one(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play(name, make_agent, store)
    live = transcript_of(played.live)
    rebuilt = transcript_of(played.stored)
    assert live.durable_entries() == rebuilt.entries
    assert rebuilt.durable_entries() == rebuilt.entries


def _of(played: Played, kind: type[E]) -> list[E]:
    return [e for e in transcript_of(played.stored).entries if isinstance(e, kind)]


async def test_a_tool_cancelled_mid_run_and_its_turn_say_so(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("cancel_mid_tool", make_agent, store)
    (tool,) = _of(played, ToolEntry)
    assert (tool.status, tool.is_error) == ("cancelled", True)
    # what it printed before the cancel stays, marked cancelled (live, stored, and so replayed)
    assert tool.result == f"line one\nline two\n{CANCELLED_RESULT}"
    cancelled, after = _of(played, TurnEntry)
    assert (cancelled.status, cancelled.reason, cancelled.repaired) == ("ended", "cancelled", False)
    assert after.reason == "completed"


@pytest.mark.parametrize("feed", ["live", "stored"])
async def test_why_a_turn_did_not_complete_follows_what_it_showed_once(
    feed: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    """Not above the user's prompt (the turn's rule stands there), and not twice: the live
    error notice gives way to the turn's end."""
    played = await play("cancel_mid_tool", make_agent, store)
    entries = transcript_of(played.live if feed == "live" else played.stored).entries
    starts = [i for i, e in enumerate(entries) if isinstance(e, TurnEntry)]
    first = entries[starts[0] : starts[1]]
    assert [type(e).__name__ for e in first] == [
        "TurnEntry",
        "UserEntry",
        "AssistantEntry",
        "ToolEntry",
        "TurnEndEntry",
    ]
    end = first[-1]
    assert isinstance(end, TurnEndEntry)
    assert (end.reason, end.message) == ("cancelled", "Cancelled by the user.")
    failed = await play("model_error_with_retries", make_agent, store)
    entries = transcript_of(failed.live if feed == "live" else failed.stored).entries
    ends = [(e.turn, e.reason, e.message) for e in entries if isinstance(e, TurnEndEntry)]
    assert ends == [(2, "error", "broken")]
    assert not [e for e in entries if isinstance(e, ErrorEntry)]
    assert isinstance(entries[-1], TurnEndEntry)


async def test_a_crashed_turn_is_marked_repaired_and_its_open_call_closed(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("crash_repaired", make_agent, store)
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
    played = await play("injects", make_agent, store)
    assert [(c.heading, c.content) for c in _of(played, ContextEntry)] == [
        ("plugin: idle", "idle note"),
        ("hook: turn", "in-turn note"),
    ]
    assert [u.content for u in _of(played, UserEntry)] == ["go"]


async def test_retries_withdraw_streamed_text(make_agent: MakeAgent, store: FlakyStore) -> None:
    played = await play("model_error_with_retries", make_agent, store)
    assert any(e.type == "assistant/reset" for e in played.live)  # "partial" was streamed
    live = transcript_of(played.live)
    assert [(r.attempt, r.reason) for r in live.entries if isinstance(r, RetryEntry)] == [
        (1, "overloaded"),
        (2, "overloaded"),
    ]
    assert [a.content for a in live.entries if isinstance(a, AssistantEntry)] == ["finally"]
    assert [(t.reason, t.message) for t in _of(played, TurnEntry)] == [
        ("completed", ""),
        ("error", "broken"),
    ]


async def test_areas_collections_and_compaction_are_entries(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("subtask", make_agent, store)
    (render,) = _of(played, AreaEntry)
    assert render.area == "subtask#1"
    (gc,) = _of(played, GcEntry)
    assert gc.areas == ("subtask#1",)
    assert [m.content for m in gc.promoted] == ["Subtask find x: x is 1"]
    with_areas = await play("areas", make_agent, store)
    assert [a.area for a in _of(with_areas, AreaEntry)] == ["plan#1", "notice#2"]
    (notice,) = _of(with_areas, GcEntry)
    # the pin's note (item 4) entered at the tail before the notice rendered (issue 31)
    assert (notice.areas, notice.reclaimed, notice.carried) == (("notice#2",), (5,), (6, 7))
    compacted = await play("compaction", make_agent, store)
    (marker,) = _of(compacted, CompactEntry)
    assert (marker.groups, marker.done, marker.carried) == (2, True, (4, 5))
    assert marker.summary.endswith("gist")


async def test_a_model_switch_shows_both_models(make_agent: MakeAgent, store: FlakyStore) -> None:
    played = await play("model_switch", make_agent, store)
    assert [m.model for m in _of(played, ModelEntry)] == ["remote", "local"]
    assert [a.model for a in _of(played, AssistantEntry)] == ["remote-model", "local"]


async def test_the_player_drives_a_transcript_both_ways(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("tools", make_agent, store)
    player: Player[tuple[TranscriptEntry, ...]] = Player(played.stored, Transcript)
    player.seek(len(played.stored))
    assert list(player.state()) == transcript_of(played.stored).entries
    turn_two = next(e.seq for e in played.stored if e.type == "turn/start" and e.seq > 5)
    player.seek(turn_two)
    assert list(player.state()) == transcript_of(played.stored[:turn_two]).entries


async def test_a_tool_card_holds_its_permission_decision(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("permission_rule", make_agent, store)
    cards = _of(played, ToolEntry)
    assert [(t.call_id, t.status, t.permission, t.result) for t in cards] == [
        ("d1", "done", "allow", "shipped"),
        ("d2", "done", "allow", "shipped"),
    ]
    markdown = export(await store.info(played.agent.session_id), played.stored, "md")
    assert markdown.count("**Tool call** `deploy` (done, permission allow)") == 2
