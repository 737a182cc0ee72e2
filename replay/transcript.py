"""`Transcript`: a session's events as the entries a reader sees, live or from the store.

Fed durable and live events (`Agent.subscribe(fn, from_seq=0)`) or durable events alone (a stored
log), it ends with the same durable entries: live-only state (streaming text, pending tool cards,
live tool output, an open permission question) is replaced by the durable entry that follows it, in
the same place. `apply` reports which keys it added, updated or removed, so a UI redraws only those.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, TypeVar

from engine.events import (
    AgentError,
    AreaRender,
    AssistantDelta,
    AssistantMessage,
    AssistantReset,
    CheckpointsOff,
    CommandRun,
    CompactEnd,
    CompactStart,
    CompactSummary,
    Cost,
    Event,
    GcCollect,
    LiveEvent,
    ModelBind,
    Payload,
    PermissionDecision,
    PermissionModeSet,
    PermissionRequest,
    Retry,
    SessionRewind,
    SessionTitle,
    StepEnd,
    ToolCallRecord,
    ToolChanges,
    ToolOutputDelta,
    ToolPending,
    ToolResultRecord,
    TurnChanges,
    TurnEnd,
    TurnStart,
    Usage,
    UserMessage,
)
from engine.gc_policy import gc_paused
from engine.money import add_cost
from replay.entries import (
    AreaEntry,
    AssistantEntry,
    CheckpointsOffEntry,
    CommandEntry,
    CompactEntry,
    ContextEntry,
    ErrorEntry,
    GcEntry,
    ModeEntry,
    ModelEntry,
    RetryEntry,
    RewindEntry,
    ToolEntry,
    ToolStatus,
    TranscriptEntry,
    TurnEndEntry,
    TurnEntry,
    UserEntry,
    evolve,
    is_live_only,
)
from replay.file_diff import batch_files

AnyEvent = Event | LiveEvent

__all__ = [
    "AreaEntry",
    "AssistantEntry",
    "Change",
    "CheckpointsOffEntry",
    "CommandEntry",
    "CompactEntry",
    "ContextEntry",
    "ErrorEntry",
    "GcEntry",
    "ModeEntry",
    "ModelEntry",
    "RetryEntry",
    "RewindEntry",
    "ToolEntry",
    "Transcript",
    "TranscriptEntry",
    "TurnEndEntry",
    "TurnEntry",
    "UserEntry",
    "changes_shown_by",
    "is_live_only",
    "transcript_of",
]

# engine/agent/turn.py writes this result (after what the call streamed, if anything) for a call
# its turn ended before it finished
CANCELLED_RESULT = "Cancelled: the turn ended before this tool call finished."


class Change(NamedTuple):
    """What one `apply` did, by entry key (a tuple: cheap to make for every event)."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.removed)


NO_CHANGE = Change()
_tuple_new = tuple.__new__  # builds a Change without NamedTuple's keyword handling
E = TypeVar("E", bound=TranscriptEntry)


def _assistant_key(turn: int, step: int) -> str:
    return f"assistant:{turn}.{step}"


def _tool_key(turn: int, step: int, call_id: str) -> str:
    return f"tool:{turn}.{step}.{call_id}"


def _pending_key(turn: int, step: int, index: int) -> str:
    return f"tool:{turn}.{step}#{index}"


class Transcript:
    """The transcript projection; `entries` is in reading order."""

    def __init__(self) -> None:
        self._order: list[str] = []
        self._entries: dict[str, TranscriptEntry] = {}
        self._first_seq: int | None = None  # of the first durable event applied
        self._last_seq = -1
        self._errors = 0
        # live tool cards of a step, keyed by stream index, until their `tool/call` arrives
        self._pending: dict[tuple[int, int], dict[int, str]] = {}
        # False until a live event arrives: a stored log has no live-only state to withdraw
        self._live_seen = False
        self._open_turn: str | None = None
        self._compact: str | None = None
        self.title = ""
        self.model = ""

    @property
    def entries(self) -> list[TranscriptEntry]:
        return [self._entries[key] for key in self._order]

    @property
    def last_seq(self) -> int:
        """The seq of the last durable event applied (-1 before any)."""
        return self._last_seq

    @property
    def first_seq(self) -> int | None:
        """The seq of the first durable event projected (None before any): a console that opened
        a session at its tail reads the earlier events as pages of their own
        (`app.tui.scrollback`)."""
        return self._first_seq

    @property
    def count(self) -> int:
        return len(self._order)

    def between(self, start: int, stop: int) -> list[TranscriptEntry]:
        """The entries at positions `start` to `stop` (a slice of `entries`, without building it)."""
        return [self._entries[key] for key in self._order[start:stop]]

    def snapshot(self) -> tuple[TranscriptEntry, ...]:
        """The entries now, as a value later events do not change (`replay.projection`)."""
        return tuple(self._entries[key] for key in self._order)

    def durable_entries(self) -> list[TranscriptEntry]:
        """The entries a stored log gives: what only a live feed shows is left out."""
        return [entry for entry in self.entries if not is_live_only(entry)]

    def get(self, key: str) -> TranscriptEntry | None:
        return self._entries.get(key)

    def apply(self, event: AnyEvent) -> Change:
        """Take one durable or live event; a durable event seen before (a stream that overflowed
        and delivers the log again) changes nothing."""
        if not isinstance(event, Event):
            return self._live(event)
        seq = event.seq
        if seq <= self._last_seq:
            return NO_CHANGE
        if self._first_seq is None:
            self._first_seq = seq
        self._last_seq = seq
        data = event.data
        # by the payload's class (never subclassed): a `match` over a dozen class patterns cost
        # more than the entry it built, on every event of a long log
        handle = _DURABLE.get(type(data))
        return NO_CHANGE if handle is None else handle(self, seq, event.time, data)

    def extend(self, events: Iterable[AnyEvent]) -> None:
        """`apply` each event, dropping what it reports: a whole log is projected through here,
        so `apply`'s steps are inlined for durable events (a call per event is a large share of
        the projection)."""
        apply, handlers = self.apply, _DURABLE
        for event in events:
            if type(event) is not Event:  # live events (an `Event` subclass takes `apply` too)
                apply(event)
                continue
            values = event.__dict__
            seq = values["seq"]
            if seq <= self._last_seq:
                continue
            if self._first_seq is None:
                self._first_seq = seq
            self._last_seq = seq
            data = values["data"]
            handle = handlers.get(type(data))
            if handle is not None:
                handle(self, seq, values["time"], data)

    # --- durable events -----------------------------------------------------------------------

    # The handlers of the events every turn holds read the payload's fields from its `__dict__`:
    # an attribute of a pydantic model goes through `BaseModel.__getattr__`'s hook and costs
    # twice a dict lookup, on every event of a long log.

    def _turn_start(self, seq: int, time: float, data: TurnStart) -> Change:
        number = data.__dict__["turn"]
        key = f"turn:{number}"
        self._open_turn = key
        return self._add(TurnEntry(key=key, seq=seq, number=number, start=time))

    def _step_end(self, seq: int, time: float, data: StepEnd) -> Change:
        values = data.__dict__
        change = self._drop_live(values["turn"], values["step"]) if self._live_seen else NO_CHANGE
        turn = self._turn()
        if turn is None:
            return change
        evolved = evolve(
            turn,
            steps=turn.steps + 1,
            usage=_plus(turn.usage, values["usage"]),
            cost=_with_cost(turn.cost, values["cost"]),
        )
        turn_change = self._replace(evolved)
        return _merge(change, turn_change) if change else turn_change

    def _turn_end(self, seq: int, time: float, data: TurnEnd) -> Change:
        turn = self._turn()
        self._open_turn = None
        if turn is None:
            return NO_CHANGE
        values = data.__dict__
        reason, message = values["reason"], values["message"]
        change = self._replace(
            evolve(
                turn,
                status="ended",
                reason=reason,
                message=message,
                end=time,
                repaired=reason == "interrupted",
            )
        )
        if reason == "completed" or not message:
            return change
        # why it did not complete stands after what the turn showed, once: the live notice of
        # the same words (`agent/error`) gives way to it
        said = self._errors_of(turn.number, message) if self._live_seen else []
        end = TurnEndEntry(
            key=f"end:{turn.number}", seq=seq, turn=turn.number, reason=reason, message=message
        )
        return _merge(change, self._remove(said), self._add(end))

    def _errors_of(self, turn: int, message: str) -> list[str]:
        """The keys of the live error entries of `turn` that say `message`."""
        keys: list[str] = []
        for index in range(len(self._order) - 1, -1, -1):
            entry = self._entries[self._order[index]]
            if isinstance(entry, TurnEntry) and entry.number == turn:
                break
            if isinstance(entry, ErrorEntry) and entry.turn == turn and entry.message == message:
                keys.append(entry.key)
        return keys

    def _turn(self) -> TurnEntry | None:
        """The open turn's entry (None between turns)."""
        key = self._open_turn
        turn = self._entries.get(key) if key is not None else None
        return turn if isinstance(turn, TurnEntry) else None

    def _user_message(self, seq: int, time: float, data: UserMessage) -> Change:
        values = data.__dict__
        source = values["source"]
        if source.kind == "user":  # `Source.is_user`, without the property call
            return self._add(
                UserEntry(
                    key=f"user:{seq}",
                    seq=seq,
                    time=time,
                    content=values["content"],
                    original=values["original_content"],
                    attachments=values["attachments"],
                    label=values["label"],
                )
            )
        return self._add(
            ContextEntry(
                key=f"context:{seq}",
                seq=seq,
                time=time,
                content=values["content"],
                source=source,
                label=values["label"],
            )
        )

    def _permission_decision(self, seq: int, time: float, data: PermissionDecision) -> Change:
        decision = data.decision
        return self._update_tool(
            data.call_id, lambda t: evolve(t, asking=False, permission=decision)
        )

    def _area_render(self, seq: int, time: float, data: AreaRender) -> Change:
        return self._add(
            AreaEntry(
                key=f"area:{seq}",
                seq=seq,
                area=data.area,
                messages=data.messages,
                earliest=data.earliest,
                latest=data.latest,
                label=data.label,
            )
        )

    def _gc_collect(self, seq: int, time: float, data: GcCollect) -> Change:
        return self._add(
            GcEntry(
                key=f"gc:{seq}",
                seq=seq,
                areas=data.areas,
                earliest=data.earliest,
                reclaimed=data.reclaimed,
                promoted=data.promoted,
                carried=data.carried,
                label=data.label,
            )
        )

    def _compact_start(self, seq: int, time: float, data: CompactStart) -> Change:
        self._compact = f"compact:{seq}"
        return self._add(
            CompactEntry(key=self._compact, seq=seq, groups=data.groups, earliest=data.earliest)
        )

    def _compact_summary(self, seq: int, time: float, data: CompactSummary) -> Change:
        return self._update_compact(
            lambda c: evolve(c, summary=data.content, model=data.model, label=data.label)
        )

    def _compact_end(self, seq: int, time: float, data: CompactEnd) -> Change:
        change = self._update_compact(
            lambda c: evolve(c, reclaimed=data.reclaimed, carried=data.carried, done=True)
        )
        self._compact = None
        return change

    def _retry(self, seq: int, time: float, data: Retry) -> Change:
        return self._add(
            RetryEntry(
                key=f"retry:{seq}",
                seq=seq,
                turn=data.turn,
                step=data.step,
                attempt=data.attempt,
                reason=data.reason,
            )
        )

    def _model_bind(self, seq: int, time: float, data: ModelBind) -> Change:
        self.model = data.model
        return self._add(ModelEntry(key=f"model:{seq}", seq=seq, model=data.model))

    def _mode(self, seq: int, time: float, data: PermissionModeSet) -> Change:
        return self._add(
            ModeEntry(key=f"mode:{seq}", seq=seq, mode=data.mode, resumed=data.resumed)
        )

    def _command(self, seq: int, time: float, data: CommandRun) -> Change:
        return self._add(
            CommandEntry(
                key=f"command:{seq}", seq=seq, line=data.line, result=data.result, label=data.label
            )
        )

    def _rewind(self, seq: int, time: float, data: SessionRewind) -> Change:
        # every turn stays: a rewind is shown where it happened, never deletes an entry
        return self._add(
            RewindEntry(
                key=f"rewind:{seq}",
                seq=seq,
                to_turn=data.to_turn,
                to_seq=data.to_seq,
                conversation=data.conversation,
                code=data.code,
                prompt=data.prompt,
                label=data.label,
                undoes=data.undoes,
                restored=data.restored,
                deleted=data.deleted,
                kept=data.kept,
                failed=data.failed,
                code_refused=data.code_refused,
            )
        )

    def _turn_changes(self, seq: int, time: float, data: TurnChanges) -> Change:
        # after the turn's end: its header says what it changed
        return self._update(f"turn:{data.turn}", TurnEntry, lambda t: evolve(t, changes=data))

    def _tool_changes(self, seq: int, time: float, data: ToolChanges) -> Change:
        """The batch's changed files go to its calls that no file record covers."""
        tools = [self._entries.get(_tool_key(data.turn, data.step, i)) for i in data.call_ids]
        calls = [t for t in tools if isinstance(t, ToolEntry)]
        named = [(t, t.name, t.change.path if t.change is not None else None) for t in calls]
        changes = [
            self._replace(evolve(tool, files=files))
            for tool, files in batch_files(named, data.files)
        ]
        return _merge(*changes)

    def _checkpoints_off(self, seq: int, time: float, data: CheckpointsOff) -> Change:
        return self._add(CheckpointsOffEntry(key=f"checkpoints:{seq}", seq=seq, reason=data.reason))

    def _session_title(self, seq: int, time: float, data: SessionTitle) -> Change:
        self.title = data.title
        return NO_CHANGE

    def _assistant_message(self, seq: int, time: float, data: AssistantMessage) -> Change:
        values = data.__dict__
        turn, step = values["turn"], values["step"]
        key = f"assistant:{turn}.{step}"  # `_assistant_key`, inlined
        entry = AssistantEntry(
            key=key,
            seq=seq,
            turn=turn,
            step=step,
            content=values["content"],
            reasoning=values["reasoning"],
            finish=values["finish"],
            model=values["model"],
            usage=values["usage"],
            label=values["label"],
        )
        if not self._live_seen:
            return self._replace(entry) if key in self._entries else self._add(entry)
        change = self._put_assistant(entry)
        pending = self._pending.get((turn, step))
        if not pending:
            return change
        # cards the stream announced that the reply does not hold (an attempt cut short) go
        called = {call.id for call in data.tool_calls}
        stale = [key for key in pending.values() if self._tool_call_id(key) not in called]
        return _merge(change, self._remove(stale))

    def _tool_call(self, seq: int, time: float, data: ToolCallRecord) -> Change:
        values = data.__dict__
        turn, step, call_id = values["turn"], values["step"], values["call_id"]
        key = f"tool:{turn}.{step}.{call_id}"  # `_tool_key`, inlined
        entry = ToolEntry(
            key=key,
            seq=seq,
            turn=turn,
            step=step,
            call_id=call_id,
            name=values["name"],
            arguments=values["arguments"],
            status="running",
            label=values["label"],
        )
        pending = self._pending.get((turn, step)) if self._pending else None
        if pending:
            for index, pending_key in list(pending.items()):
                if pending_key == key:
                    del pending[index]
                    return self._replace(entry)
        return self._add(entry)

    def _tool_result(self, seq: int, time: float, data: ToolResultRecord) -> Change:
        values = data.__dict__
        tool = self._entries.get(f"tool:{values['turn']}.{values['step']}.{values['call_id']}")
        if not isinstance(tool, ToolEntry):
            return NO_CHANGE
        status: ToolStatus = "done"
        is_error, content = values["is_error"], values["content"]
        if tool.permission == "cancelled" or (is_error and _cancelled(content)):
            status = "cancelled"
        elif is_error:
            status = "error"
        return self._replace(
            evolve(
                tool,
                status=status,
                output="",
                asking=False,
                result=content,
                is_error=is_error,
                change=values["change"],
            )
        )

    # --- live events --------------------------------------------------------------------------

    def _live(self, event: LiveEvent) -> Change:
        self._live_seen = True
        data, seq = event.data, event.after_seq
        match data:
            case AssistantDelta(turn=turn, step=step, text=text, reasoning=reasoning):
                key = _assistant_key(turn, step)
                current = self._entries.get(key)
                if isinstance(current, AssistantEntry):
                    if not current.streaming:
                        return NO_CHANGE  # the durable reply is already here
                    return self._replace(
                        evolve(
                            current,
                            content=current.content + text,
                            reasoning=current.reasoning + reasoning,
                        )
                    )
                return self._put_assistant(
                    AssistantEntry(
                        key=key,
                        seq=seq,
                        turn=turn,
                        step=step,
                        content=text,
                        reasoning=reasoning,
                        streaming=True,
                    )
                )
            case AssistantReset(turn=turn, step=step):
                return self._drop_live(turn, step)
            case ToolPending():
                return self._tool_pending(seq, data)
            case ToolOutputDelta(turn=turn, step=step, call_id=call_id, text=text):
                return self._update(
                    _tool_key(turn, step, call_id),
                    ToolEntry,
                    lambda t: evolve(t, output=t.output + text) if t.status == "running" else t,
                )
            case PermissionRequest(call_id=call_id):
                return self._update_tool(
                    call_id, lambda t: evolve(t, asking=True) if t.permission is None else t
                )
            case AgentError(turn=turn, message=message):
                self._errors += 1
                return self._add(
                    ErrorEntry(key=f"error:{self._errors}", seq=seq, turn=turn, message=message)
                )
            case _:
                # status, queue, outbox and overflow notices belong to other views
                return NO_CHANGE

    def _tool_pending(self, seq: int, data: ToolPending) -> Change:
        step_key = (data.turn, data.step)
        pending = self._pending.setdefault(step_key, {})
        key = (
            _tool_key(data.turn, data.step, data.call_id)
            if data.call_id
            else _pending_key(data.turn, data.step, data.index)
        )
        if key in self._entries and pending.get(data.index) != key:
            return NO_CHANGE  # that call is already recorded
        entry = ToolEntry(
            key=key,
            seq=seq,
            turn=data.turn,
            step=data.step,
            call_id=data.call_id,
            name=data.name,
            arguments={},
            raw_arguments=data.arguments,
            status="pending",
        )
        previous = pending.get(data.index)
        pending[data.index] = key
        if previous is None:
            return self._add(entry)
        if previous == key:
            return self._replace(entry)
        # the stream named the call's id only now: the card changes key in place
        position = self.index(previous)
        del self._entries[previous]
        self._order[position] = key
        self._entries[key] = entry
        return Change(added=(key,), removed=(previous,))

    # --- keeping the order --------------------------------------------------------------------

    def _put_assistant(self, entry: AssistantEntry) -> Change:
        """A step's reply stands where its streamed text stood, or before the step's tool cards
        (which a stream may announce before any text), as in the log."""
        if entry.key in self._entries:
            return self._replace(entry)
        pending = self._pending.get((entry.turn, entry.step))
        if not pending:
            return self._add(entry)
        positions = [self.index(key) for key in pending.values()]
        self._order.insert(min(positions), entry.key)
        self._entries[entry.key] = entry
        return _tuple_new(Change, ((entry.key,), (), ()))

    def _drop_live(self, turn: int, step: int) -> Change:
        """Withdraw what only the stream showed for a step (a reset, or the step ended)."""
        pending = self._pending.pop((turn, step), None)
        stale = list(pending.values()) if pending else []
        assistant = self._entries.get(_assistant_key(turn, step))
        if isinstance(assistant, AssistantEntry) and assistant.streaming:
            stale.append(assistant.key)
        if not stale:
            return NO_CHANGE
        return self._remove(
            [key for key in stale if key in self._entries and is_live_only(self._entries[key])]
        )

    def _tool_call_id(self, key: str) -> str:
        entry = self._entries.get(key)
        return entry.call_id if isinstance(entry, ToolEntry) else ""

    def index(self, key: str) -> int:
        """Where the entry with `key` stands in `entries` (a UI mounts an added entry there);
        searched from the end, where changes happen. `KeyError` for a key not shown."""
        for index in range(len(self._order) - 1, -1, -1):
            if self._order[index] == key:
                return index
        raise KeyError(key)

    def _add(self, entry: TranscriptEntry) -> Change:
        key = entry.key
        self._order.append(key)
        self._entries[key] = entry
        return _tuple_new(Change, ((key,), (), ()))

    def _replace(self, entry: TranscriptEntry) -> Change:
        key = entry.key
        self._entries[key] = entry
        return _tuple_new(Change, ((), (key,), ()))

    def _remove(self, keys: list[str]) -> Change:
        removed = tuple(key for key in keys if key in self._entries)
        for key in removed:
            del self._order[self.index(key)]
            del self._entries[key]
        for pending in self._pending.values():
            for index in [i for i, key in pending.items() if key in removed]:
                del pending[index]
        return Change(removed=removed) if removed else NO_CHANGE

    def _update(self, key: str | None, kind: type[E], change: Callable[[E], E]) -> Change:
        current = self._entries.get(key) if key is not None else None
        if not isinstance(current, kind):
            return NO_CHANGE
        new = change(current)
        if new is current:  # a change function returns the entry itself when nothing changes
            return NO_CHANGE
        return self._replace(new)

    def _update_compact(self, change: Callable[[CompactEntry], CompactEntry]) -> Change:
        return self._update(self._compact, CompactEntry, change)

    def _update_tool(self, call_id: str, change: Callable[[ToolEntry], ToolEntry]) -> Change:
        """A permission event names only the call id: the latest card with that id is meant."""
        for index in range(len(self._order) - 1, -1, -1):
            entry = self._entries[self._order[index]]
            if isinstance(entry, ToolEntry) and entry.call_id == call_id:
                return self._update(entry.key, ToolEntry, change)
        return NO_CHANGE


_DURABLE: dict[type[Payload], Callable[[Transcript, int, float, Any], Change]] = {
    TurnStart: Transcript._turn_start,
    StepEnd: Transcript._step_end,
    TurnEnd: Transcript._turn_end,
    UserMessage: Transcript._user_message,
    AssistantMessage: Transcript._assistant_message,
    ToolCallRecord: Transcript._tool_call,
    PermissionDecision: Transcript._permission_decision,
    ToolResultRecord: Transcript._tool_result,
    AreaRender: Transcript._area_render,
    GcCollect: Transcript._gc_collect,
    CompactStart: Transcript._compact_start,
    CompactSummary: Transcript._compact_summary,
    CompactEnd: Transcript._compact_end,
    Retry: Transcript._retry,
    ModelBind: Transcript._model_bind,
    PermissionModeSet: Transcript._mode,
    CommandRun: Transcript._command,
    SessionRewind: Transcript._rewind,
    TurnChanges: Transcript._turn_changes,
    ToolChanges: Transcript._tool_changes,
    CheckpointsOff: Transcript._checkpoints_off,
    SessionTitle: Transcript._session_title,
}
"""What each durable payload class does to the transcript; the rest (area registration and
state, cursor moves, floor blocks, pins, permission rules, step starts) shape the Context, not
what a reader reads."""


def changes_shown_by(data: Payload) -> tuple[str, ...]:
    """The keys of the entries that show what `data` says the workspace changed (a turn's rule
    for `turn/changes`, the batch's cards for `tool/changes`); none for any other event."""
    if type(data) is TurnChanges:
        return (f"turn:{data.turn}",)
    if type(data) is ToolChanges:
        return tuple(_tool_key(data.turn, data.step, call_id) for call_id in data.call_ids)
    return ()


def _cancelled(content: str) -> bool:
    """Whether a result is the one the engine writes for a call its turn ended before it
    finished: the cancellation alone, or after the output the call streamed."""
    return content.endswith(CANCELLED_RESULT) and (
        len(content) == len(CANCELLED_RESULT) or content[-len(CANCELLED_RESULT) - 1] == "\n"
    )


def _plus(total: Usage, more: Usage) -> Usage:
    """`total + more` without validating again what the log already validated."""
    added = more.__dict__  # read past `BaseModel.__getattr__`'s hook: every step end adds
    if not any(added.values()):
        return total
    held = total.__dict__
    return Usage.model_construct(**{part: held[part] + count for part, count in added.items()})


def _with_cost(total: Mapping[str, float] | None, cost: Cost | None) -> Mapping[str, float] | None:
    if cost is None:
        return total
    return add_cost(total or {}, cost.amount, cost.currency)


def _merge(*changes: Change) -> Change:
    busy = [c for c in changes if c]
    if len(busy) < 2:
        return busy[0] if busy else NO_CHANGE
    return Change(
        added=tuple(k for c in changes for k in c.added),
        updated=tuple(k for c in changes for k in c.updated),
        removed=tuple(k for c in changes for k in c.removed),
    )


def transcript_of(events: Iterable[AnyEvent]) -> Transcript:
    """The transcript of a whole event sequence (durable, or durable and live); bulk work that
    makes no cycles, so the cyclic collector is paused (engine/gc_policy.py)."""
    transcript = Transcript()
    with gc_paused():
        transcript.extend(events)
    return transcript
