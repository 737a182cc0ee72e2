"""The one checker that guards every session log (docs/ARCHITECTURE.md, the one event log).

Every writer goes through `LogState.check`; the store's tail repair is computed from the same state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.events import (
    Event,
    Payload,
    PermissionDecision,
    Scope,
    SessionRewind,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    encode_data,
)
from engine.gc_policy import gc_paused

INTERRUPTED_TOOL_RESULT = (
    "Interrupted: the session ended before this tool call finished "
    "(it was not started, or its outcome is unknown)."
)
INTERRUPTED_TURN_MESSAGE = "The session ended while this turn was running."


class InvariantError(ValueError):
    """An event would break the log's invariants; nothing was appended."""

    def __init__(self, seq: int, rule: str) -> None:
        self.seq = seq
        self.rule = rule
        super().__init__(f"invariant violated at seq {seq}: {rule}")


class UnstorableEventError(InvariantError):
    """An event holds what no store can write (a lone surrogate from undecodable OS text), so it
    may not enter the log: a log with an event it can never flush would refuse every later one."""

    def __init__(self, seq: int, event_type: str, reason: str) -> None:
        self.reason = reason
        super().__init__(seq, f"{event_type} cannot be stored: {reason}")


def check_storable(event: Event) -> None:
    """Raise `UnstorableEventError` unless `event` serializes as the store will write it."""
    try:
        encode_data(event)
    except ValueError as exc:  # pydantic's serialization error is a ValueError
        raise UnstorableEventError(event.seq, event.type, str(exc)) from exc


_SHAPES: dict[type[Payload], tuple[Scope, bool, bool]] = {}


def _shape_of(kind: type[Payload]) -> tuple[Scope, bool, bool]:
    """A payload class's scope and whether it has a `turn` and a `step` field, looked up once per
    class: every event of a loaded log is checked, and reading the scope through an instance
    passes pydantic's `__getattr__` hook, asking for a missing field costs an exception."""
    shape = _SHAPES[kind] = (kind.scope, "turn" in kind.model_fields, "step" in kind.model_fields)
    return shape


@dataclass(slots=True)
class LogState:
    """Where a log stands: next seq, the open turn and step, the open step's tool calls."""

    next_seq: int = 0
    last_turn: int = 0
    open_turn: int | None = None
    last_step: int = 0
    open_step: int | None = None
    calls: dict[str, bool] = field(default_factory=dict)  # call_id -> has a result

    @classmethod
    def of(cls, events: Iterable[Event]) -> LogState:
        state = cls()
        with gc_paused():  # a whole log is checked on load and resume
            for event in events:
                state.check_payload(event.seq, event.data)
                state.apply(event)
        return state

    @classmethod
    def following(cls, events: Iterable[Event]) -> LogState:
        """The state after events already checked when they were stored, e.g. a log's open turn
        read from its `turn/start` on: enough to compute that turn's repair."""
        state = cls()
        for event in events:
            state.apply(event)
        return state

    def copy(self) -> LogState:
        return LogState(
            self.next_seq,
            self.last_turn,
            self.open_turn,
            self.last_step,
            self.open_step,
            dict(self.calls),
        )

    def check(self, event: Event) -> None:
        """Raise `InvariantError` if `event` may not come next; changes nothing."""
        self.check_payload(event.seq, event.data)

    def check_payload(self, seq: int, data: Payload) -> None:
        if seq != self.next_seq:
            raise InvariantError(seq, f"seq must be {self.next_seq}, got {seq} (seq is contiguous)")
        kind = type(data)  # by exact class (see `Payload`)
        scope, has_turn, has_step = _SHAPES.get(kind) or _shape_of(kind)
        if scope is Scope.session:
            if kind is SessionRewind:
                self._check_rewind(seq, data)
            return
        if scope is Scope.live:
            raise InvariantError(seq, f"{data.event_type} is live-only and is never stored")
        if kind is TurnStart:
            if self.open_turn is not None:
                raise InvariantError(seq, f"turn/start while turn {self.open_turn} is open")
            turn = data.__dict__["turn"]
            if turn != self.last_turn + 1:
                raise InvariantError(
                    seq, f"turn must be {self.last_turn + 1}, got {turn} (turns are contiguous)"
                )
            return
        if self.open_turn is None:
            raise InvariantError(
                seq, f"{data.event_type} outside a turn (turn-level events need an open turn)"
            )
        turn = data.__dict__["turn"] if has_turn else None
        if turn is not None and turn != self.open_turn:
            raise InvariantError(
                seq, f"{data.event_type} names turn {turn} but turn {self.open_turn} is open"
            )
        if has_step and kind is not StepStart:
            self._check_in_step(seq, data, data.__dict__["step"])
            return
        match data:
            case TurnEnd():
                if self.open_step is not None:
                    raise InvariantError(seq, f"turn/end while step {self.open_step} is open")
            case StepStart():
                if self.open_step is not None:
                    raise InvariantError(seq, f"step/start while step {self.open_step} is open")
                if data.step != self.last_step + 1:
                    raise InvariantError(
                        seq,
                        f"step must be {self.last_step + 1}, got {data.step} (steps are contiguous)",
                    )
            case PermissionDecision(call_id=call_id):
                # asked for a call of the open step before it ran (or resolved as cancelled)
                if self.open_step is None:
                    raise InvariantError(seq, f"{data.event_type} outside a step")
                if call_id not in self.calls:
                    raise InvariantError(
                        seq,
                        f"{data.event_type} for no tool/call {call_id!r} in step {self.open_step}",
                    )
                if self.calls[call_id]:
                    raise InvariantError(seq, f"{data.event_type} for {call_id!r} after its result")
            case _:
                return

    def _check_rewind(self, seq: int, data: Payload) -> None:
        """A rewind happens between turns, to an earlier turn's start."""
        if self.open_turn is not None:
            raise InvariantError(seq, f"session/rewind while turn {self.open_turn} is open")
        to_turn, to_seq = data.__dict__["to_turn"], data.__dict__["to_seq"]
        if not 0 < to_turn <= self.last_turn:
            raise InvariantError(
                seq, f"session/rewind to turn {to_turn}, but the turns are 1..{self.last_turn}"
            )
        if not 0 <= to_seq < seq:
            raise InvariantError(seq, f"session/rewind to seq {to_seq}, not before it")

    def _check_in_step(self, seq: int, data: Payload, step: int) -> None:
        """A payload with a step field (other than step/start) needs that step open."""
        if self.open_step is None:
            raise InvariantError(seq, f"{data.event_type} outside a step")
        if step != self.open_step:
            raise InvariantError(
                seq, f"{data.event_type} names step {step} but step {self.open_step} is open"
            )
        kind = type(data)
        if kind is ToolCallRecord:
            call_id = data.__dict__["call_id"]
            if call_id in self.calls:
                raise InvariantError(seq, f"tool/call {call_id!r} repeated in step {step}")
        elif kind is ToolResultRecord:
            call_id = data.__dict__["call_id"]
            if call_id not in self.calls:
                raise InvariantError(
                    seq, f"tool/result {call_id!r} before its tool/call in this step"
                )
            if self.calls[call_id]:
                raise InvariantError(seq, f"tool/result {call_id!r} repeated")

    def apply(self, event: Event) -> None:
        """Advance past an event that `check` accepted."""
        self.next_seq = event.seq + 1
        data = event.data
        kind = type(data)  # a payload class is never subclassed: each declares its own type
        if kind is ToolCallRecord:
            self.calls[data.__dict__["call_id"]] = False
        elif kind is ToolResultRecord:
            self.calls[data.__dict__["call_id"]] = True
        elif kind is StepStart:
            self.open_step = self.last_step = data.__dict__["step"]
            self.calls = {}
        elif kind is StepEnd:
            self.open_step = None
            self.calls = {}
        elif kind is TurnStart:
            self.open_turn = self.last_turn = data.__dict__["turn"]
            self.last_step = 0
        elif kind is TurnEnd:
            self.open_turn = None

    @property
    def dangling_calls(self) -> list[str]:
        return [call_id for call_id, done in self.calls.items() if not done]

    def closing_payloads(self, reason_message: str = INTERRUPTED_TURN_MESSAGE) -> list[Payload]:
        """What repairs an interrupted tail: results for dangling calls, step/end, turn/end."""
        if self.open_turn is None:
            return []
        turn = self.open_turn
        closing: list[Payload] = []
        if self.open_step is not None:
            step = self.open_step
            closing.extend(
                ToolResultRecord(
                    turn=turn,
                    step=step,
                    call_id=call_id,
                    content=INTERRUPTED_TOOL_RESULT,
                    is_error=True,
                )
                for call_id in self.dangling_calls
            )
            closing.append(StepEnd(turn=turn, step=step))
        closing.append(TurnEnd(turn=turn, reason="interrupted", message=reason_message))
        return closing
