"""replay.acp: the one translator of events into ACP `session/update` payloads, live and replayed."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from engine.events import (
    AssistantDelta,
    AssistantMessage,
    Attachment,
    CommandRun,
    Event,
    LiveEvent,
    Payload,
    PermissionModeSet,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnStart,
    UserMessage,
    make_event,
)
from engine.message import Source
from replay.acp import (
    UPDATE_LIMIT,
    AcpProjection,
    AcpUpdate,
    cut_text,
    json_size,
    replay_updates,
    split_text,
    tool_kind,
)
from tests.acp.schema_check import check_update
from tests.agent.conftest import FlakyStore, MakeAgent
from tests.replay.live_scenarios import NAMES, play

MIB = 1024 * 1024


def _wire(update: AcpUpdate) -> dict[str, Any]:
    """The update as a client receives it, checked against the package's schema on the way."""
    check_update({"sessionId": "s" * 32, "update": update})
    return update


def _text_by_kind(updates: list[AcpUpdate]) -> dict[str, str]:
    texts: dict[str, str] = defaultdict(str)
    for update in updates:
        body = _wire(update)
        if body["sessionUpdate"].endswith("_chunk") and body["content"]["type"] == "text":
            texts[body["sessionUpdate"]] += body["content"]["text"]
    return dict(texts)


def _tool_states(updates: list[AcpUpdate]) -> dict[str, str]:
    states: dict[str, str] = {}
    for update in updates:
        body = _wire(update)
        if body["sessionUpdate"] in ("tool_call", "tool_call_update") and "status" in body:
            states[body["toolCallId"]] = body["status"]
    return states


@pytest.mark.parametrize("name", NAMES)
async def test_live_updates_and_replayed_ones_tell_the_same_story(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play(name, make_agent, store)
    live = AcpProjection("/ws")
    live_updates = [u for event in played.live for u in live.apply(event)]
    replayed = list(replay_updates(played.stored, "/ws"))

    live_text, replay_text = _text_by_kind(live_updates), _text_by_kind(replayed)
    replay_text.pop("user_message_chunk", None)  # shown only when replaying
    if name == "model_error_with_retries":
        # ACP cannot withdraw what streamed before a retry: the client keeps it, the log does not
        withdrawn = live_text["agent_message_chunk"].removesuffix(
            replay_text["agent_message_chunk"]
        )
        assert withdrawn == "partial"
        live_text["agent_message_chunk"] = replay_text["agent_message_chunk"]
    assert live_text == replay_text
    assert _tool_states(live_updates) == _tool_states(replayed)
    usage = [_wire(u) for u in replayed if _wire(u)["sessionUpdate"] == "usage_update"]
    assert len(usage) == sum(1 for e in played.stored if e.type == "step/end")


@pytest.mark.parametrize("name", NAMES)
async def test_a_replay_translates_each_stored_event_as_apply_does(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    """`replay` translates a range without a call through `apply` per event: the same updates,
    in the same order, and the projection goes on live afterwards."""
    played = await play(name, make_agent, store)
    one_by_one = AcpProjection("/ws", replaying=True)
    expected = [update for event in played.stored for update in one_by_one.apply(event)]
    projection = AcpProjection("/ws")
    assert list(projection.replay(played.stored)) == expected
    assert not projection.replaying


async def test_replay_shows_direct_words_but_never_injected_context(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("injects", make_agent, store)
    users = [e.data for e in played.stored if isinstance(e.data, UserMessage)]
    direct = [u.content for u in users if u.source.is_user]
    injected = [u.content for u in users if not u.source.is_user]
    assert direct
    assert injected
    shown = _text_by_kind(list(replay_updates(played.stored, "/ws")))["user_message_chunk"]
    assert shown == "".join(direct)
    everything = json.dumps([_wire(u) for u in replay_updates(played.stored, "/ws")])
    for text in injected:
        assert text not in everything


def _event(seq: int, payload: Payload) -> Event:
    return Event(seq=seq, time=0.0, type=payload.event_type, data=payload)


def _live(payload: Payload) -> LiveEvent:
    return LiveEvent(time=0.0, type=payload.event_type, after_seq=0, data=payload)


def _call(seq: int, call_id: str, name: str, **arguments: Any) -> Event:
    return _event(
        seq, ToolCallRecord(turn=1, step=1, call_id=call_id, name=name, arguments=arguments)
    )


def test_text_streamed_live_is_not_repeated_by_the_durable_reply() -> None:
    projection = AcpProjection("/ws")
    projection.apply(_event(0, StepStart(turn=1, step=1)))
    streamed = [
        u
        for text in ("Hel", "lo")
        for u in projection.apply(_live(AssistantDelta(turn=1, step=1, text=text)))
    ]
    final = projection.apply(_event(1, AssistantMessage(turn=1, step=1, content="Hello!")))
    assert _text_by_kind([*streamed, *final]) == {"agent_message_chunk": "Hello!"}


def test_long_text_is_split_into_chunks_that_each_fit() -> None:
    text = "é" * (3 * MIB)  # two bytes a character: 6 MiB of UTF-8
    updates = list(
        replay_updates(
            [
                _event(0, TurnStart(turn=1)),
                _event(1, StepStart(turn=1, step=1)),
                _event(2, AssistantMessage(turn=1, step=1, content=text)),
            ],
            "/ws",
        )
    )
    assert len(updates) > 5
    assert all(json_size(_wire(u)) <= UPDATE_LIMIT for u in updates)
    assert _text_by_kind(updates)["agent_message_chunk"] == text


def test_split_text_keeps_every_character_and_respects_escapes() -> None:
    text = ('a\n\x01"\\' * 5000) + "😀" * 3000
    pieces = split_text(text, 4096)
    assert "".join(pieces) == text
    assert all(len(json.dumps(p, ensure_ascii=False).encode()) <= 4096 for p in pieces)


def test_a_lone_huge_tool_result_is_cut_with_a_marker() -> None:
    projection = AcpProjection("/ws")
    projection.apply(
        _event(
            0,
            ToolCallRecord(
                turn=1, step=1, call_id="c1", name="read_file", arguments={"path": "big.txt"}
            ),
        )
    )
    (update,) = projection.apply(
        _event(1, ToolResultRecord(turn=1, step=1, call_id="c1", content="x" * (2 * MIB)))
    )
    body = _wire(update)
    assert json_size(body) <= UPDATE_LIMIT
    text = body["content"][0]["content"]["text"]
    assert text.startswith("xxx")
    assert "of 2,097,152 characters shown; the full text is in the session log" in text
    assert body["status"] == "completed"


def test_an_edit_carries_its_kind_locations_and_a_diff_within_the_limit() -> None:
    projection = AcpProjection("/ws")
    (small,) = projection.apply(
        _call(0, "c1", "edit_file", path="src/a.py", old="x = 1", new="x = 2")
    )
    body = _wire(small)
    assert body["kind"] == "edit"
    assert body["locations"] == [{"path": "/ws/src/a.py"}]
    assert body["content"] == [
        {"type": "diff", "path": "/ws/src/a.py", "oldText": "x = 1", "newText": "x = 2"}
    ]
    (huge,) = projection.apply(
        _call(1, "c2", "write_file", path="big.txt", content="y" * (3 * MIB))
    )
    body = _wire(huge)
    assert json_size(body) <= UPDATE_LIMIT
    assert "the full text is in the session log" in body["content"][0]["newText"]


def test_a_tool_input_too_large_as_a_whole_is_replaced_by_a_marker() -> None:
    """Short strings and scalars are kept as they are; values that are not (a long list, a huge
    number) are measured, and an input over its budget as a whole becomes a marker."""
    projection = AcpProjection("/ws", limit=64 * 1024)
    plain = {"path": "a.txt", "limit": 10, "ratio": 0.5, "all": True, "none": None}
    assert projection.tool_call("c1", "read_file", plain)["rawInput"] == plain
    big_number = {"n": 10**4000}
    assert projection.tool_call("c2", "run", big_number)["rawInput"] == big_number
    for too_large in ({"items": list(range(100_000))}, {"nested": {"k": "v" * 70_000}}):
        assert projection.tool_call("c3", "run", too_large)["rawInput"] == {
            "_trellis": "the input is too large for the client; it is in the session log"
        }


def _chunk(kind: str, text: str) -> AcpUpdate:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def test_coalescing_joins_adjacent_streamed_text_of_one_kind_and_nothing_else() -> None:
    projection = AcpProjection("/ws")
    usage = {"sessionUpdate": "usage_update", "used": 1, "size": 10}
    noted = {**_chunk("agent_message_chunk", "d"), "_meta": {"k": 1}}
    # kept as they are: a chunk alone between others, one with `_meta`, replayed user words
    kept = [
        usage,
        _chunk("agent_message_chunk", "lone"),
        noted,
        _chunk("agent_message_chunk", "e"),
        _chunk("user_message_chunk", "u1"),
        _chunk("user_message_chunk", "u2"),
    ]
    thoughts = [_chunk("agent_thought_chunk", t) for t in ("think ", "more ")]
    words = [_chunk("agent_message_chunk", t) for t in ("a ", "b ", "c")]
    updates = [*thoughts, *words, *kept]
    assert [_wire(u) for u in projection.coalesced(updates)] == [
        _chunk("agent_thought_chunk", "think more "),
        _chunk("agent_message_chunk", "a b c"),
        *kept,
    ]
    assert projection.coalesced(updates[:1]) == updates[:1]


def test_coalesced_text_is_split_again_where_it_would_not_fit_one_message() -> None:
    projection = AcpProjection("/ws", limit=64 * 1024)
    pieces = [f"{n:04d} " + "é" * 2000 for n in range(100)]
    joined = projection.coalesced([_chunk("agent_message_chunk", p) for p in pieces])
    assert 1 < len(joined) < len(pieces)
    assert "".join(_wire(u)["content"]["text"] for u in joined) == "".join(pieces)
    assert all(json_size(u) <= 64 * 1024 for u in joined)


def test_tool_kinds_come_from_the_tools_themselves() -> None:
    assert [
        tool_kind(n)
        for n in ("read_file", "list_files", "search", "write_file", "run_shell", "srv__x")
    ] == ["read", "read", "search", "edit", "execute", "other"]


def test_attachments_come_back_as_resource_blocks() -> None:
    message = UserMessage(
        content="look",
        source=Source("user"),
        attachments=(
            Attachment(
                name="a.py", uri="file:///ws/a.py", mime_type="text/x-python", text="print(1)"
            ),
            Attachment(name="b.md", uri="file:///ws/b.md"),
        ),
    )
    updates = list(replay_updates([_event(0, message)], "/ws"))
    blocks = [_wire(u)["content"] for u in updates]
    assert blocks[0] == {"type": "text", "text": "look"}
    assert blocks[1]["type"] == "resource"
    assert blocks[1]["resource"] == {
        "uri": "file:///ws/a.py",
        "mimeType": "text/x-python",
        "text": "print(1)",
    }
    assert blocks[2]["type"] == "resource_link"
    assert blocks[2]["uri"] == "file:///ws/b.md"


def test_usage_is_reported_tokens_or_characters_over_three() -> None:
    projection = AcpProjection("/ws")
    projection.apply(_event(0, StepStart(turn=1, step=1)))
    projection.apply(_event(1, AssistantMessage(turn=1, step=1, content="x" * 30)))
    (estimated,) = projection.apply(_event(2, StepEnd(turn=1, step=1)))
    assert _wire(estimated)["used"] == 10


def test_cut_text_leaves_short_text_alone() -> None:
    assert cut_text("short", 100) == "short"


def _text_by_message(updates: list[AcpUpdate]) -> dict[tuple[str, str], str]:
    """The text of each message: by kind and `messageId` (every agent chunk carries one)."""
    texts: dict[tuple[str, str], str] = defaultdict(str)
    for update in updates:
        body = _wire(update)
        if body["sessionUpdate"] in ("agent_message_chunk", "agent_thought_chunk"):
            texts[body["sessionUpdate"], body["messageId"]] += body["content"]["text"]
    return dict(texts)


@pytest.mark.parametrize("name", NAMES)
async def test_each_message_keeps_one_message_id_live_and_replayed(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play(name, make_agent, store)
    live = AcpProjection("/ws")
    live_messages = _text_by_message([u for event in played.live for u in live.apply(event)])
    replayed = _text_by_message(list(replay_updates(played.stored, "/ws")))
    assert live_messages.keys() == replayed.keys()
    if name != "model_error_with_retries":  # what streamed before a retry stays live only
        assert live_messages == replayed


def test_every_step_and_its_reasoning_are_messages_of_their_own() -> None:
    projection = AcpProjection("/ws")
    updates = [
        *projection.apply(_event(0, StepStart(turn=1, step=1))),
        *projection.apply(_live(AssistantDelta(turn=1, step=1, text="Hel", reasoning="hm"))),
        *projection.apply(_live(AssistantDelta(turn=1, step=1, text="lo"))),
        *projection.apply(_event(1, AssistantMessage(turn=1, step=1, content="Hello"))),
        *projection.apply(_event(2, StepStart(turn=1, step=2))),
        *projection.apply(_live(AssistantDelta(turn=1, step=2, text="Bye"))),
        *projection.apply(_event(3, StepStart(turn=2, step=1))),
        *projection.apply(_live(AssistantDelta(turn=2, step=1, text="Again"))),
    ]
    assert _text_by_message(updates) == {
        ("agent_thought_chunk", "1.1.thought"): "hm",
        ("agent_message_chunk", "1.1"): "Hello",
        ("agent_message_chunk", "1.2"): "Bye",
        ("agent_message_chunk", "2.1"): "Again",
    }


def test_coalescing_keeps_each_message_id_and_never_joins_two_messages() -> None:
    projection = AcpProjection("/ws")
    first = [{**_chunk("agent_message_chunk", t), "messageId": "m1"} for t in ("a ", "b")]
    second = [{**_chunk("agent_message_chunk", t), "messageId": "m2"} for t in ("c ", "d")]
    assert [_wire(u) for u in projection.coalesced([*first, *second])] == [
        {**_chunk("agent_message_chunk", "a b"), "messageId": "m1"},
        {**_chunk("agent_message_chunk", "c d"), "messageId": "m2"},
    ]


def test_a_mode_change_and_a_command_read_as_they_did_live() -> None:
    """`permission/mode` is a `current_mode_update` (a fallback on resume also says why);
    `command/run` is the answer as the agent's message, and when replaying the command too."""
    events = [
        make_event(CommandRun(line="/mode read-only", result="mode read-only: ..."), 0, 0.0),
        make_event(PermissionModeSet(mode="read-only"), 1, 0.0),
        make_event(PermissionModeSet(mode="ask", resumed=True), 2, 0.0),
    ]
    live = [_wire(u) for e in events for u in AcpProjection("/w").apply(e)]
    replayed = [_wire(u) for u in AcpProjection("/w").replay(events)]
    modes = [u["currentModeId"] for u in live if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["read-only", "ask"]
    said = _text_by_kind(live)
    assert said.get("user_message_chunk") is None  # live, the client holds what it sent
    assert said["agent_message_chunk"] == (
        "mode read-only: ...The mode is ask: approve all ends when a session is reopened.\n"
    )
    assert _text_by_kind(replayed)["user_message_chunk"] == "/mode read-only"
    assert [u["sessionUpdate"] for u in replayed][1:] == [u["sessionUpdate"] for u in live]


def test_a_commands_answer_keeps_its_lines_in_a_markdown_client() -> None:
    """Toad showed `/rewind 1`'s answer as one paragraph: a client that renders Markdown joins
    lines a single newline parts, so each line of a command's plain answer ends in a hard break,
    live and replayed; a one-line answer is as it was."""
    answer = "rewound to before turn 1\nfiles removed: made.txt\npins: none"
    events = [
        make_event(CommandRun(line="/rewind 1", result=answer), 0, 0.0),
        make_event(CommandRun(line="/pin x", result="pinned pin1"), 1, 0.0),
    ]
    for updates in (
        [u for e in events for u in AcpProjection("/w").apply(e)],
        AcpProjection("/w").replay(events),
    ):
        said = _text_by_kind([_wire(u) for u in updates])["agent_message_chunk"]
        assert said == (
            "rewound to before turn 1  \nfiles removed: made.txt  \npins: nonepinned pin1"
        )
