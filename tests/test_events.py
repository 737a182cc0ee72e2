"""Events: every type of the log (docs/ARCHITECTURE.md) with its fields, a lossless JSON round trip,
readers that refuse."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.events import (
    EVENT_TYPES,
    LIVE_EVENT_TYPES,
    PAYLOADS,
    AgentError,
    AgentQueued,
    AgentStatus,
    AreaCursor,
    AreaRegister,
    AreaRender,
    AreaState,
    AssistantDelta,
    AssistantMessage,
    AssistantReset,
    Attachment,
    CheckpointsOff,
    CommandRun,
    CompactEnd,
    CompactStart,
    CompactSummary,
    Event,
    EventDecodeError,
    Figures,
    FloorBlock,
    GcCollect,
    LiveEvent,
    MessageData,
    ModelBind,
    OutboxChanged,
    Payload,
    PermissionDecision,
    PermissionModeSet,
    PermissionRequest,
    PermissionRule,
    PinAdd,
    PinRemove,
    PrefixBreak,
    Retry,
    Scope,
    SessionRewind,
    SessionTitle,
    SteerDropped,
    StepEnd,
    StepStart,
    StreamOverflow,
    ToolCallRecord,
    ToolChanges,
    ToolDefinition,
    ToolOutputDelta,
    ToolPending,
    ToolResultRecord,
    TurnChanges,
    TurnEnd,
    TurnStart,
    UnknownEventTypeError,
    Usage,
    UserMessage,
    WorkspaceFileChange,
    assistant_delta,
    decode_event,
    decode_event_json,
    decode_live_event,
    decode_row,
    encode_data,
    encode_event,
    is_turn_level,
    make_event,
    make_live_event,
    payload_class,
)
from engine.message import Message, Role, Source, ToolCall
from engine.privacy import PrivacyClass, PrivatizationLabel

# each type with the fields the specs and docs/ARCHITECTURE.md rely on.
DESIGN_TURN_LEVEL: dict[str, set[str]] = {
    "step/start": {
        "turn",
        "step",
        "prefix_digest",
        "floor",
        "figures",
        "kept",
        "egress",
        "label",
        "tools",
        "prefix_chars",
        "request_chars",
    },
    "step/end": {"turn", "step", "usage"},
    "assistant/message": {
        "turn",
        "step",
        "content",
        "reasoning",
        "tool_calls",
        "model",
        "usage",
        "finish",
        "provider_state",
        "label",
    },
    "tool/call": {"turn", "step", "call_id", "name", "arguments", "label"},
    "tool/result": {"turn", "step", "call_id", "content", "is_error", "label"},
    "area/render": {"area", "messages", "earliest", "latest"},
    "area/cursor": {"area"},
    "gc/collect": {"areas", "earliest", "reclaimed", "promoted", "carried"},
    "retry": {"turn", "step", "attempt", "reason"},
    "permission/decision": {"call_id", "decision"},
    "turn/start": {"turn"},
    "turn/end": {"turn", "reason", "message"},
    # what a batch of commands changed in the workspace (issue 30)
    "tool/changes": {"turn", "step", "call_ids", "before", "after", "files"},
    # a planned break of the request prefix, before the step/start it shortens (issue 31)
    "prefix/break": {"turn", "before_step", "reason", "detail"},
}
DESIGN_SESSION_LEVEL: dict[str, set[str]] = {
    "user/message": {"content", "source", "original_content", "attachments", "label"},
    "area/register": {"area", "kind", "name", "state"},
    "area/state": {"area", "life", "flow", "state"},
    "floor/block": {"hash", "layer", "key", "text", "label"},
    "tool/define": {"hash", "name", "text", "label"},
    "pin/add": set(),
    "pin/remove": set(),
    "model/bind": {"model", "grant_epoch"},
    "permission/rule": {"tool", "decision"},
    "compact/start": set(),
    "compact/summary": set(),
    "compact/end": set(),
    "session/title": {"title", "label"},
    # the permission mode and the record of slash commands
    "permission/mode": {"mode", "resumed"},
    "command/run": {"line", "result", "label"},
    # a rewind (issue 30)
    "session/rewind": {
        "to_turn",
        "to_seq",
        "conversation",
        "code",
        "prompt",
        "label",
        "undoes",
        "code_target",
        "code_before",
        "code_after",
        "restored",
        "deleted",
        "kept",
        "failed",
        "code_refused",
    },
    # what a turn changed in the workspace, and why there are no checkpoints (issue 30)
    "turn/changes": {"turn", "before", "after", "files"},
    "checkpoints/off": {"reason"},
}
DESIGN_LIVE = {
    "assistant/delta",
    "assistant/reset",
    "tool/pending",
    "tool/output",
    "permission/request",
    "stream/overflow",
    "agent/status",
    "agent/queued",
    "agent/error",
    "outbox/changed",
    "steer/dropped",
}
DESIGN_TURN_END_REASONS = {
    "completed",
    "cancelled",
    "error",
    "max_steps",
    "max_tokens",
    "refusal",
    "egress",
    "budget",
    "interrupted",
    "disposed",
}

LABEL = PrivatizationLabel(
    cls=PrivacyClass.private,
    weight=3,
    categories=frozenset({"pii", "code"}),
    subjects=frozenset({"alice"}),
    parents=frozenset({"file:a.py", "seq:4"}),
)
MESSAGE = MessageData(
    role=Role.assistant,
    content="done",
    source=Source("area", "subtask"),
    tool_calls=(ToolCall("c1", "read_file", {"path": "a.py"}),),
    tool_call_id="c0",
    is_error=True,
)

# One instance of every payload type, each field away from its default where it has one.
CHANGE = WorkspaceFileChange(
    path="src/app.py",
    status="modified",
    old_blob="c" * 40,
    new_blob="d" * 40,
    old_mode="100644",
    new_mode="100644",
    added_lines=1,
    removed_lines=1,
    diff="--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-a\n+b\n",
    label=LABEL,
)
DURABLE_SAMPLES: list[Payload] = [
    StepStart(
        turn=2,
        step=3,
        prefix_digest="ab" * 32,
        floor=("h1", "h2"),
        figures=Figures(chars=10, cap=20, groups_kept=1, groups_dropped=2, reserved=3),
        kept=(4, 9),
        egress=PrivacyClass.private,
        label=LABEL,
        tools=("t1", "t2"),
        prefix_chars=1_200,
        request_chars=1_250,
    ),
    PrefixBreak(turn=2, before_step=3, reason="eviction", detail="5 oldest turns dropped"),
    StepEnd(turn=2, step=3, usage=Usage(input_tokens=11, output_tokens=7)),
    AssistantMessage(
        turn=2,
        step=3,
        content="héllo ✓\n",
        reasoning="thinking",
        tool_calls=(ToolCall("c1", "list_files", {"path": ".", "n": [1]}),),
        model="qwen3:8b",
        usage=Usage(input_tokens=1, output_tokens=2),
        finish="tool_calls",
        provider_state={"signature": "sig", "nested": {"a": [1, 2.5, None, True]}},
        label=LABEL,
    ),
    ToolCallRecord(
        turn=2, step=3, call_id="c1", name="read_file", arguments={"path": "x"}, label=LABEL
    ),
    ToolResultRecord(turn=2, step=3, call_id="c1", content="contents", is_error=True, label=LABEL),
    AreaRender(area="a1", messages=(MESSAGE,), earliest=4, latest=9),
    AreaCursor(area="a1"),
    GcCollect(
        areas=("a1", "a2"), earliest=3, reclaimed=(3, 4), promoted=(MESSAGE,), carried=(5, 6)
    ),
    Retry(turn=2, step=3, attempt=2, reason="HTTP 529"),
    PermissionDecision(call_id="c1", decision="deny"),
    TurnStart(turn=2),
    TurnEnd(turn=2, reason="budget", message="needs 10, allowed 5"),
    UserMessage(
        content="look at this",
        source=Source("hook", "lint"),
        original_content="look",
        attachments=(Attachment(name="a.py", uri="file:///a.py", mime_type="text/x-python"),),
        label=LABEL,
    ),
    AreaRegister(area="a1", kind="watch", name="watch a.py", state={"path": "a.py"}),
    AreaState(area="a1", life="retired", flow="exclusive", state={"done": True}),
    FloorBlock(hash="ff" * 32, layer=2, key="AGENTS.md", text="be careful", label=LABEL),
    ToolDefinition(hash="ee" * 32, name="look", text='{"name":"look"}', label=LABEL),
    PinAdd(pin_id="p1", text="remember"),
    PinRemove(pin_id="p1"),
    ModelBind(model="local", grant_epoch=2),
    PermissionRule(tool="run_shell", decision="allow"),
    CompactStart(groups=3, earliest=12),
    CompactSummary(content="summary", model="local", label=LABEL),
    CompactEnd(earliest=12, reclaimed=(12, 13), carried=(14,)),
    SessionTitle(title="Fix the bug", label=LABEL),
    PermissionModeSet(mode="read-only", resumed=True),
    CommandRun(line="/pin keep it short", result="pinned pin1", label=LABEL),
    SessionRewind(to_turn=2, to_seq=7, conversation=True, prompt="try again", label=LABEL),
    ToolChanges(turn=1, step=2, call_ids=("c1",), before="a" * 40, after="b" * 40, files=(CHANGE,)),
    TurnChanges(turn=1, before="a" * 40, after="b" * 40, files=(CHANGE,)),
    CheckpointsOff(reason="checkpoints are off in the configuration ([checkpoints] enabled)"),
]
LIVE_SAMPLES: list[Payload] = [
    AssistantDelta(turn=1, step=2, text="he", reasoning="hm"),
    AssistantReset(turn=1, step=2),
    ToolPending(turn=1, step=2, index=0, call_id="c1", name="read_file", arguments='{"pa'),
    ToolOutputDelta(turn=1, step=2, call_id="c1", text="line 1\n"),
    PermissionRequest(
        turn=1, step=2, call_id="c1", tool="run_shell", arguments={"command": "ls"}, kind="execute"
    ),
    AgentStatus(status="waiting"),
    StreamOverflow(last_seq=12),
    AgentQueued(messages=("next",), steering=("faster",)),
    AgentError(turn=1, message="boom"),
    OutboxChanged(contexts=(MESSAGE,), steering=("s",)),
    SteerDropped(text="dropped"),
]


def durable(payload: Payload, seq: int = 41) -> Event:
    return make_event(payload, seq, 1_700_000_000.123456)


def test_every_design_event_type_exists_with_its_scope() -> None:
    assert set(DESIGN_TURN_LEVEL) | set(DESIGN_SESSION_LEVEL) == EVENT_TYPES
    assert DESIGN_LIVE == LIVE_EVENT_TYPES
    for payload in DURABLE_SAMPLES:
        expected = Scope.turn if payload.event_type in DESIGN_TURN_LEVEL else Scope.session
        assert payload.scope is expected, payload.event_type
        assert is_turn_level(durable(payload)) is (expected is Scope.turn)
    assert all(payload.scope is Scope.live for payload in LIVE_SAMPLES)


@pytest.mark.parametrize(
    ("event_type", "fields"), sorted({**DESIGN_TURN_LEVEL, **DESIGN_SESSION_LEVEL}.items())
)
def test_every_design_field_exists(event_type: str, fields: set[str]) -> None:
    declared = {type(p).event_type: type(p) for p in DURABLE_SAMPLES}[event_type]
    assert payload_class(event_type) is declared
    assert PAYLOADS[event_type] is declared
    assert fields <= set(declared.model_fields)


def test_turn_end_reasons_are_the_designed_ones() -> None:
    for reason in DESIGN_TURN_END_REASONS:
        TurnEnd.model_validate({"turn": 1, "reason": reason})
    with pytest.raises(ValueError, match="reason"):
        TurnEnd.model_validate({"turn": 1, "reason": "bored"})


def test_samples_cover_every_type() -> None:
    """A type added to the union without a sample here fails this test, so none is forgotten."""
    assert {p.event_type for p in DURABLE_SAMPLES} == EVENT_TYPES
    assert len(DURABLE_SAMPLES) == len(EVENT_TYPES)
    assert {p.event_type for p in LIVE_SAMPLES} == LIVE_EVENT_TYPES
    assert len(LIVE_SAMPLES) == len(LIVE_EVENT_TYPES)


@pytest.mark.parametrize("payload", DURABLE_SAMPLES, ids=lambda p: p.event_type)
def test_durable_event_round_trips_through_json(payload: Payload) -> None:
    event = durable(payload)
    assert event.type == payload.event_type

    decoded = decode_event_json(encode_event(event))
    assert decoded == event
    assert type(decoded.data) is type(payload)
    assert encode_event(decoded) == encode_event(event)

    row = decode_row(event.seq, event.time, event.type, encode_data(event))
    assert row == event
    assert type(row.data) is type(payload)
    assert encode_event(row) == encode_event(event)

    assert decode_event(json.loads(encode_event(event))) == event


@pytest.mark.parametrize("payload", LIVE_SAMPLES, ids=lambda p: p.event_type)
def test_live_event_round_trips_through_json(payload: Payload) -> None:
    event = make_live_event(payload, 12.5, after_seq=7)
    assert (event.type, event.after_seq) == (payload.event_type, 7)
    decoded = decode_live_event(json.loads(encode_event(event)))
    assert decoded == event
    assert type(decoded.data) is type(payload)
    assert type(payload).model_validate_json(encode_data(event)) == payload


@pytest.mark.parametrize("payload", LIVE_SAMPLES, ids=lambda p: p.event_type)
def test_live_event_is_what_model_construct_builds(payload: Payload) -> None:
    event = make_live_event(payload, 12.5, after_seq=7)
    built = LiveEvent.model_construct(time=12.5, type=payload.event_type, after_seq=7, data=payload)
    assert event == built
    assert event.model_fields_set == built.model_fields_set
    assert event.model_dump() == built.model_dump()


@pytest.mark.parametrize(
    ("text", "reasoning"), [("word ", ""), ("", "hmm "), ("", ""), ("é\n", "")]
)
def test_a_built_delta_is_the_validated_one(text: str, reasoning: str) -> None:
    values = {"text": text} if text or not reasoning else {"reasoning": reasoning}
    validated = AssistantDelta(turn=3, step=2, **values)
    built = assistant_delta(3, 2, text=text, reasoning=reasoning)
    assert built == validated
    assert built.model_fields_set == validated.model_fields_set
    assert encode_data(make_live_event(built, 1.0, 4)) == validated.model_dump_json()


def test_agent_error_may_come_before_any_turn() -> None:
    event = make_live_event(AgentError(turn=None, message="blocked"), 1.0, after_seq=-1)
    assert decode_live_event(json.loads(event.model_dump_json())) == event


def test_message_data_converts_to_and_from_messages() -> None:
    message = Message(
        Role.assistant,
        "x",
        source=Source("plugin"),
        tool_calls=(ToolCall("c", "read_file", {"path": "a"}),),
    )
    assert MessageData.of(message).to_message() == message
    assert MESSAGE.to_message().tool_calls[0] == ToolCall("c1", "read_file", {"path": "a.py"})


def test_label_round_trip_keeps_class_and_sets() -> None:
    dumped = json.loads(LABEL.model_dump_json())
    assert dumped["cls"] == "private"
    assert dumped["parents"] == ["file:a.py", "seq:4"]
    assert PrivatizationLabel.model_validate(dumped) == LABEL


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=100, deadline=None)
@given(
    content=st.text(),
    arguments=st.dictionaries(st.text(), JSON_VALUES, max_size=4),
    time=st.floats(min_value=0, max_value=4e9, allow_nan=False),
)
def test_arbitrary_text_and_arguments_round_trip(
    content: str, arguments: dict[str, Any], time: float
) -> None:
    for payload in (
        UserMessage(content=content, source=Source("plugin", "x")),
        ToolCallRecord(turn=1, step=1, call_id=content, name="t", arguments=arguments),
        AssistantMessage(turn=1, step=1, content=content, provider_state=arguments),
    ):
        event = make_event(payload, 0, time)
        assert decode_event_json(encode_event(event)) == event
        assert decode_row(0, time, event.type, encode_data(event)) == event


# --- readers refuse -------------------------------------------------------------------------------


def test_reading_an_unknown_type_names_it_and_the_seq() -> None:
    raw = {"seq": 17, "time": 1.0, "type": "tool/explode", "data": {}}
    with pytest.raises(UnknownEventTypeError, match=r"'tool/explode' at seq 17") as caught:
        decode_event_json(json.dumps(raw))
    assert (caught.value.event_type, caught.value.seq) == ("tool/explode", 17)
    with pytest.raises(UnknownEventTypeError, match=r"'tool/explode' at seq 17"):
        decode_event(raw)
    with pytest.raises(UnknownEventTypeError, match=r"'tool/explode' at seq 17"):
        decode_row(17, 1.0, "tool/explode", "{}")


@pytest.mark.parametrize("live_type", sorted(LIVE_EVENT_TYPES))
def test_live_types_are_unknown_to_durable_readers(live_type: str) -> None:
    with pytest.raises(UnknownEventTypeError, match=f"'{live_type}' at seq 3"):
        decode_row(3, 1.0, live_type, "{}")


def test_bad_data_names_the_type_and_the_seq() -> None:
    with pytest.raises(EventDecodeError, match=r"invalid turn/start event at seq 9"):
        decode_row(9, 1.0, "turn/start", '{"turn": "one"}')
    with pytest.raises(EventDecodeError, match=r"invalid turn/start event at seq 9"):
        decode_row(9, 1.0, "turn/start", "not json")
    raw = {"seq": 9, "time": 1.0, "type": "turn/end", "data": {"turn": 1, "reason": "nope"}}
    with pytest.raises(EventDecodeError, match=r"invalid turn/end event at seq 9"):
        decode_event(raw)


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(EventDecodeError, match="seq 2"):
        decode_row(2, 1.0, "turn/start", '{"turn": 1, "extra": 0}')


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '"event"', b'{"seq": "\xff"}'])
def test_malformed_json_is_a_decode_error(text: str | bytes) -> None:
    with pytest.raises(EventDecodeError):
        decode_event_json(text)


def test_wrapping_refuses_the_wrong_kind_of_payload() -> None:
    with pytest.raises(TypeError, match="not a durable"):
        make_event(SteerDropped(text="x"), 0, 0.0)
    with pytest.raises(TypeError, match="not a live"):
        make_live_event(TurnStart(turn=1), 0.0, -1)


def test_events_are_immutable() -> None:
    event = durable(TurnStart(turn=1))
    with pytest.raises(ValueError, match="frozen"):
        event.seq = 2  # type: ignore[misc]
    live: LiveEvent = make_live_event(SteerDropped(text="x"), 0.0, -1)
    with pytest.raises(ValueError, match="frozen"):
        live.time = 1.0  # type: ignore[misc]


def test_a_type_is_declared_once() -> None:
    """The declaration is the one place a type is named: a second one is refused at import."""
    with pytest.raises(TypeError, match="declared twice"):

        class Again(Payload, event="turn/start", scope=Scope.turn):
            turn: int


def test_a_payload_class_is_never_an_event_type_under_another_name() -> None:
    """Readers of the log dispatch on a payload's exact class (`type(data) is TurnStart`): a
    subclass that declares no event type of its own is refused, so none can pass for its base."""
    with pytest.raises(TypeError, match="must declare event= and scope="):

        class Later(TurnStart):
            pass


def test_a_payload_class_is_never_subclassed() -> None:
    """A subclass with an event type of its own is refused too: it would pass a `match` on its
    base's class pattern."""
    with pytest.raises(TypeError, match="subclasses a payload class"):

        class Later(TurnStart, event="turn/later", scope=Scope.turn):
            pass


def test_data_of_another_type_is_refused() -> None:
    raw = {"seq": 1, "time": 1.0, "type": "turn/start", "data": TurnEnd(turn=1, reason="completed")}
    with pytest.raises(ValueError, match="does not fit"):
        Event.model_validate(raw)
    with pytest.raises(UnknownEventTypeError):
        decode_live_event({"time": 1.0, "type": "turn/start", "after_seq": 0, "data": {"turn": 1}})
