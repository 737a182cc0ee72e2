"""The invariant checker: generated valid logs pass, and each single corruption is caught at its seq."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.events import (
    AreaCursor,
    AreaRegister,
    AreaRender,
    AreaState,
    AssistantDelta,
    AssistantMessage,
    CompactEnd,
    CompactStart,
    CompactSummary,
    Event,
    FloorBlock,
    GcCollect,
    ModelBind,
    Payload,
    PermissionDecision,
    PermissionRule,
    PinAdd,
    PinRemove,
    Retry,
    SessionTitle,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
    make_event,
)
from engine.invariants import (
    INTERRUPTED_TOOL_RESULT,
    InvariantError,
    LogState,
)
from engine.message import Source, ToolCall

PROPERTY_SETTINGS = settings(max_examples=100, deadline=None)

SESSION_LEVEL: list[Payload] = [
    UserMessage(content="hi"),
    UserMessage(content="ctx", source=Source("plugin", "lint")),
    AreaRegister(area="a1", kind="notice"),
    AreaState(area="a1", life="retired", flow="yielded"),
    FloorBlock(hash="h", layer=1, key="identity", text="you"),
    PinAdd(pin_id="p", text="note"),
    PinRemove(pin_id="p"),
    ModelBind(model="m", grant_epoch=1),
    PermissionRule(tool="run_shell", decision="allow"),
    CompactStart(groups=1, earliest=0),
    CompactSummary(content="s"),
    CompactEnd(earliest=0),
    SessionTitle(title="t"),
]
# Turn-level events without turn or step numbers: areas render and collect before each step.
AREA_AND_GC: list[Payload] = [
    AreaRender(area="a1", messages=(), earliest=0, latest=0),
    AreaCursor(area="a1"),
    AreaCursor(area=None),
    GcCollect(areas=("a1",), earliest=0, reclaimed=(0,)),
]
session_events = st.lists(st.sampled_from(SESSION_LEVEL), max_size=2)
between_steps = st.lists(st.sampled_from(SESSION_LEVEL + AREA_AND_GC), max_size=2)


def seal(payloads: Sequence[Payload]) -> list[Event]:
    """Number payloads from seq 0, as `Session.append` would."""
    return [make_event(p, seq, float(seq)) for seq, p in enumerate(payloads)]


def check(payloads: Sequence[Payload]) -> LogState:
    return LogState.of(seal(payloads))


@st.composite
def steps_of_turn(
    draw: st.DrawFn, turn: int, min_steps: int, min_calls: int, first_call: int
) -> list[Payload]:
    log: list[Payload] = []
    call_number = first_call
    for step in range(1, draw(st.integers(min_steps, min_steps + 2)) + 1):
        log += draw(between_steps)
        log.append(StepStart(turn=turn, step=step, prefix_digest="d", floor=("h",)))
        if draw(st.booleans()):
            log.append(Retry(turn=turn, step=step, attempt=1, reason="429"))
        ids = [f"c{call_number + i}" for i in range(draw(st.integers(min_calls, min_calls + 2)))]
        call_number += len(ids)
        log.append(
            AssistantMessage(
                turn=turn,
                step=step,
                content="ok",
                tool_calls=tuple(ToolCall(i, "read_file") for i in ids),
                finish="tool_calls" if ids else "stop",
            )
        )
        calls = [ToolCallRecord(turn=turn, step=step, call_id=i, name="read_file") for i in ids]
        results = [ToolResultRecord(turn=turn, step=step, call_id=i, content="x") for i in ids]
        if draw(st.booleans()):  # every call first, then every result
            log += [*calls, *results]
        else:  # each call followed by its permission decision, other events, and result
            for call, result in zip(calls, results, strict=True):
                log.append(call)
                if draw(st.booleans()):
                    log.append(PermissionDecision(call_id=call.call_id, decision="allow"))
                log += draw(session_events)
                log.append(result)
        log += draw(session_events)  # the outbox drained after the results
        log.append(StepEnd(turn=turn, step=step))
    return log


@st.composite
def valid_logs(
    draw: st.DrawFn, *, min_turns: int = 0, min_steps: int = 0, min_calls: int = 0
) -> list[Payload]:
    """Session-level events anywhere, turns of steps, tool calls each answered within the step;
    the last turn may be cut anywhere after its start (a running or interrupted tail)."""
    log: list[Payload] = list(draw(session_events))
    turns = draw(st.integers(min_turns, min_turns + 1))
    for turn in range(1, turns + 1):
        log.append(TurnStart(turn=turn))
        log += draw(session_events)
        first_call = sum(isinstance(p, ToolCallRecord) for p in log)
        log += draw(steps_of_turn(turn, min_steps, min_calls, first_call))
        log += draw(between_steps)
        reason = draw(st.sampled_from(["completed", "cancelled", "max_steps", "error"]))
        log.append(TurnEnd(turn=turn, reason=reason))
        log += draw(session_events)
    if turns and draw(st.booleans()):
        last_start = max(i for i, p in enumerate(log) if isinstance(p, TurnStart))
        log = log[: draw(st.integers(last_start + 1, len(log)))]
    return log


def turn_closed_positions(log: Sequence[Payload]) -> list[int]:
    """Indices where an event could be inserted with no turn open."""
    positions = [0]
    open_turn = False
    for index, payload in enumerate(log):
        if isinstance(payload, TurnStart):
            open_turn = True
        elif isinstance(payload, TurnEnd):
            open_turn = False
        if not open_turn:
            positions.append(index + 1)
    return positions


def assert_rejected_at(log: Sequence[Payload], seq: int, rule: str) -> None:
    """`LogState.of` fails exactly at `seq`, and the failed check leaves the state untouched."""
    events = seal(log)
    with pytest.raises(InvariantError) as caught:
        LogState.of(events)
    assert caught.value.seq == seq
    assert rule in caught.value.rule
    assert f"seq {seq}" in str(caught.value)
    state = LogState.of(events[:seq])
    before = state.copy()
    with pytest.raises(InvariantError):
        state.check(events[seq])
    assert state == before


# --- properties -----------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(valid_logs())
def test_valid_logs_are_accepted(log: list[Payload]) -> None:
    state = check(log)
    assert state.next_seq == len(log)
    turn_starts = sum(isinstance(p, TurnStart) for p in log)
    assert state.last_turn == turn_starts
    closed = turn_starts == sum(isinstance(p, TurnEnd) for p in log)
    assert (state.open_turn is None) is closed


@PROPERTY_SETTINGS
@given(valid_logs(), st.data())
def test_any_prefix_is_valid_and_its_repair_closes_it(
    log: list[Payload], data: st.DataObject
) -> None:
    prefix = log[: data.draw(st.integers(0, len(log)))]
    state = check(prefix)
    repair = state.closing_payloads()
    assert (repair == []) is (state.open_turn is None)
    repaired = check([*prefix, *repair])
    assert repaired.open_turn is None
    assert repaired.open_step is None
    assert repaired.dangling_calls == []
    dangling = set(state.dangling_calls)
    answered = {p.call_id for p in repair if isinstance(p, ToolResultRecord)}
    assert answered == dangling
    assert all(
        p.is_error and p.content == INTERRUPTED_TOOL_RESULT
        for p in repair
        if isinstance(p, ToolResultRecord)
    )
    if repair:
        assert isinstance(repair[-1], TurnEnd)
        assert repair[-1].reason == "interrupted"


@PROPERTY_SETTINGS
@given(valid_logs(min_turns=2), st.data())
def test_dropped_turn_end_is_rejected(log: list[Payload], data: st.DataObject) -> None:
    ends = [
        i
        for i, p in enumerate(log)
        if isinstance(p, TurnEnd) and any(isinstance(q, TurnStart) for q in log[i:])
    ]
    dropped = data.draw(st.sampled_from(ends))
    corrupted = log[:dropped] + log[dropped + 1 :]
    next_start = next(
        i for i in range(dropped, len(corrupted)) if isinstance(corrupted[i], TurnStart)
    )
    assert_rejected_at(corrupted, next_start, "turn/start while turn")


@PROPERTY_SETTINGS
@given(valid_logs(min_turns=2, min_steps=1), st.data())
def test_duplicated_step_is_rejected(log: list[Payload], data: st.DataObject) -> None:
    ends = [i for i, p in enumerate(log) if isinstance(p, StepEnd)]
    end = data.draw(st.sampled_from(ends))
    start = max(i for i in range(end) if isinstance(log[i], StepStart))
    corrupted = log[: end + 1] + log[start : end + 1] + log[end + 1 :]
    assert_rejected_at(corrupted, end + 1, "steps are contiguous")


@PROPERTY_SETTINGS
@given(valid_logs(min_turns=2, min_steps=1, min_calls=1), st.data())
def test_tool_result_before_its_call_is_rejected(log: list[Payload], data: st.DataObject) -> None:
    calls = {p.call_id: i for i, p in enumerate(log) if isinstance(p, ToolCallRecord)}
    pairs = [(calls[p.call_id], j) for j, p in enumerate(log) if isinstance(p, ToolResultRecord)]
    call, result = data.draw(st.sampled_from(pairs))
    corrupted = list(log)
    corrupted.insert(call, corrupted.pop(result))
    assert_rejected_at(corrupted, call, "before its tool/call")


TURN_LEVEL_STRAYS: list[Payload] = [
    *AREA_AND_GC,
    StepStart(turn=1, step=1),
    StepEnd(turn=1, step=1),
    AssistantMessage(turn=1, step=1),
    ToolCallRecord(turn=1, step=1, call_id="x", name="t"),
    ToolResultRecord(turn=1, step=1, call_id="x", content=""),
    Retry(turn=1, step=1, attempt=1, reason="r"),
    PermissionDecision(call_id="x", decision="deny"),
    TurnEnd(turn=1, reason="completed"),
]


@PROPERTY_SETTINGS
@given(valid_logs(), st.sampled_from(TURN_LEVEL_STRAYS), st.data())
def test_turn_level_event_outside_a_turn_is_rejected(
    log: list[Payload], stray: Payload, data: st.DataObject
) -> None:
    position = data.draw(st.sampled_from(turn_closed_positions(log)))
    corrupted = [*log[:position], stray, *log[position:]]
    assert_rejected_at(corrupted, position, "outside a turn")


# --- each rule, by example ------------------------------------------------------------------------


def turn(n: int, *inner: Payload) -> list[Payload]:
    return [TurnStart(turn=n), *inner, TurnEnd(turn=n, reason="completed")]


def step(t: int, s: int, *inner: Payload) -> list[Payload]:
    return [StepStart(turn=t, step=s), *inner, StepEnd(turn=t, step=s)]


def call(t: int, s: int, call_id: str) -> ToolCallRecord:
    return ToolCallRecord(turn=t, step=s, call_id=call_id, name="read_file")


def result(t: int, s: int, call_id: str) -> ToolResultRecord:
    return ToolResultRecord(turn=t, step=s, call_id=call_id, content="ok")


CASES: dict[str, tuple[list[Payload], int, str]] = {
    "turns skip a number": ([*turn(1), TurnStart(turn=3)], 2, "turns are contiguous"),
    "first turn is not 1": ([TurnStart(turn=0)], 0, "turn must be 1"),
    "turn/start inside a turn": ([TurnStart(turn=1), TurnStart(turn=2)], 1, "turn/start while"),
    "steps skip a number": (
        [TurnStart(turn=1), *step(1, 1), StepStart(turn=1, step=3)],
        3,
        "steps are contiguous",
    ),
    "step/start inside a step": (
        [TurnStart(turn=1), StepStart(turn=1, step=1), StepStart(turn=1, step=2)],
        2,
        "step/start while step 1",
    ),
    "turn/end while a step is open": (
        [TurnStart(turn=1), StepStart(turn=1, step=1), TurnEnd(turn=1, reason="completed")],
        2,
        "turn/end while step 1",
    ),
    "event names another turn": (
        [TurnStart(turn=1), StepStart(turn=2, step=1)],
        1,
        "names turn 2 but turn 1",
    ),
    "event names another step": (
        [TurnStart(turn=1), StepStart(turn=1, step=1), AssistantMessage(turn=1, step=2)],
        2,
        "names step 2 but step 1",
    ),
    "step event outside a step": (
        [TurnStart(turn=1), AssistantMessage(turn=1, step=1)],
        1,
        "outside a step",
    ),
    "tool/call repeated": (
        [TurnStart(turn=1), StepStart(turn=1, step=1), call(1, 1, "a"), call(1, 1, "a")],
        3,
        "repeated",
    ),
    "tool/result repeated": (
        [TurnStart(turn=1), StepStart(turn=1, step=1), call(1, 1, "a"), *[result(1, 1, "a")] * 2],
        4,
        "repeated",
    ),
    "tool/result for a call of an earlier step": (
        [TurnStart(turn=1), *step(1, 1, call(1, 1, "a")), *step(1, 2, result(1, 2, "a"))],
        5,
        "before its tool/call",
    ),
}


@pytest.mark.parametrize(("log", "seq", "rule"), CASES.values(), ids=CASES.keys())
def test_each_rule_rejects(log: list[Payload], seq: int, rule: str) -> None:
    assert_rejected_at(log, seq, rule)


def test_live_events_are_never_in_the_log() -> None:
    with pytest.raises(InvariantError, match="live-only") as caught:
        LogState().check_payload(0, AssistantDelta(turn=1, step=1))
    assert caught.value.seq == 0


def test_seq_must_be_contiguous() -> None:
    events = seal([UserMessage(content="a"), UserMessage(content="b")])
    gap = make_event(UserMessage(content="c"), 5, 0.0)
    with pytest.raises(InvariantError, match=r"seq must be 2, got 5") as caught:
        LogState.of([*events, gap])
    assert caught.value.seq == 5


def test_numbering_restarts_per_turn_and_session_events_go_anywhere() -> None:
    log = [
        UserMessage(content="before"),
        *turn(
            1,
            UserMessage(content="q"),
            *step(1, 1, call(1, 1, "a"), UserMessage(content="x", source=Source("hook"))),
        ),
    ]
    log[-2:-2] = [result(1, 1, "a")]  # answer the call before its step ends
    log += turn(2, *step(2, 1), *step(2, 2))
    state = check(log)
    assert (state.last_turn, state.last_step, state.open_turn) == (2, 2, None)


def test_step_end_does_not_require_results() -> None:
    """An unanswered call is repaired on load, not refused on append (docs/ARCHITECTURE.md, the
    store)."""
    check([TurnStart(turn=1), *step(1, 1, call(1, 1, "a"))])


def test_copy_is_independent() -> None:
    state = check([TurnStart(turn=1), StepStart(turn=1, step=1), call(1, 1, "a")])
    copy = state.copy()
    copy.calls["b"] = True
    copy.open_turn = None
    assert state.calls == {"a": False}
    assert state.open_turn == 1


def test_closed_log_needs_no_repair() -> None:
    assert check(turn(1)).closing_payloads() == []


def test_repair_of_an_open_step() -> None:
    state = check([TurnStart(turn=1), StepStart(turn=1, step=1), call(1, 1, "a"), call(1, 1, "b")])
    state.apply(make_event(result(1, 1, "a"), state.next_seq, 0.0))
    repair = state.closing_payloads("lost")
    assert [type(p) for p in repair] == [ToolResultRecord, StepEnd, TurnEnd]
    assert isinstance(repair[0], ToolResultRecord)
    assert repair[0].call_id == "b"
    assert repair[-1] == TurnEnd(turn=1, reason="interrupted", message="lost")
