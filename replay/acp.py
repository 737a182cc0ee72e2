"""Events -> ACP `session/update` payloads (docs/ARCHITECTURE.md, "The ACP bridge"): the one
translator used by live prompts and by `session/load`, so a client sees a replayed session as it saw
it live.

`AcpProjection.apply(event)` takes durable and live events in log order and returns the updates
they make, as the `acp` package's schema models:

- a direct `user/message` -> `user_message_chunk`s (its attachments back as resource blocks) when
  replaying; live, the client already holds the words it sent. Injected context, areas, GC and the
  floor are not shown to a plain client.
- `assistant/delta` -> `agent_message_chunk` / `agent_thought_chunk` as it streams; the step's
  `assistant/message` adds only what was not streamed, so live and replay show the same text.
  Each step's reply is one message and its reasoning another: every chunk carries the `messageId`
  its turn and step name (`message_id`: "3.2" for turn 3, step 2), the same live and on replay.
- `tool/call` -> `tool_call` (kind, locations, raw input, a diff for edits); an allowed
  `permission/decision` -> `in_progress`; `tool/output` -> the running output's tail; `tool/result`
  -> `tool_call_update` with its final status and the result, and for a file the call changed the
  diff of the whole file as its record holds it (`FileChangeRecord`: `oldText` null for a file the
  call created) beside the result, with the changed line in `locations`. Live, the feed adds the
  whole file's diff before the call runs (`preview`), from the disk.
- `tool/changes` (after a batch that held a shell command or an MCP tool) -> each such call's
  `tool_call_update` again: its result, then the unified diffs of the files its batch changed
  as text (ACP's `diff` needs whole texts, which the log does not keep for these), with the
  paths in `locations`.
- a plan Area's `area/state` (`engine.context.areas.plan`, what `/plan` changes) -> `plan` with
  every item (`completed` or `pending`; Trellis has no priorities, so each is `medium`), when the
  items changed;
- `step/end` -> `usage_update` (`engine.context.usage`: tokens as reported, else the characters
  at the last reported rate or 3 a token, against the model's window, else the cap / 3; the
  step's token parts, uncached input, cache reads and writes, output, under `_meta`; `cost`,
  the session's so far, when its steps recorded one); `retry` -> a thought saying so;
  `session/title` -> `session_info_update`.
- `permission/mode` -> `current_mode_update` (and, when approve-all fell back to ask on a resume,
  a message saying so); `command/run` -> the command as the user's words (when replaying: live,
  the client holds what it sent) and its answer as the agent's, as the client saw it live.
- `session/rewind` -> a message naming the turn, quoting the prompt it went back before and
  naming the files it restored, removed and kept (or why it left them), then `current_mode_update` and `plan` where the mode and plans before that prompt differ from
  what the client holds (a conversation rewind brings them back).

Sizes: no update serializes to more than `limit` bytes. Long text is split into several chunks; a
tool result, diff or input that alone exceeds the limit is cut with a marker (the full text stays
in the log).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from engine.context.usage import TokenRate, context_usage, reply_chars
from engine.events import (
    AreaRegister,
    AreaState,
    AssistantDelta,
    AssistantMessage,
    AssistantReset,
    Attachment,
    CommandRun,
    Event,
    Figures,
    FileChangeRecord,
    LiveEvent,
    Payload,
    PermissionDecision,
    PermissionModeSet,
    Retry,
    SessionRewind,
    SessionTitle,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolChanges,
    ToolOutputDelta,
    ToolResultRecord,
    UserMessage,
)
from engine.line_diff import first_changed_line, split_lines
from engine.permission_mode import DEFAULT_MODE, PermissionMode
from engine.rewind_intervals import RewoundIntervals
from replay.file_diff import batch_files, file_diff, file_line
from replay.wording import rewind_files, rewind_line

AcpUpdate = dict[str, Any]
"""One `session/update` payload as ACP writes it: camelCase keys, no null fields, ready for the
wire as it is. The `acp` package's schema models (`SessionUpdate`) are the contract: the tests
validate every update against them (`tests/acp/schema_check.py`). Built as plain values because
building and dumping a model per update cost more than everything else `session/load` does."""

UPDATE_LIMIT = 1024 * 1024 - 8 * 1024
"""Bytes one serialized update may take: 1 MiB per message, less room for the JSON-RPC envelope
and the session id around it."""

OUTPUT_TAIL = 64 * 1024
"""Characters of a running tool's output shown while it runs (its latest part)."""

TITLE_ARGUMENT_CHARS = 80

LOCATED_FILES = 200
"""The files a command changed that its update names in `locations` (the diffs name them all)."""

MIN_MEASURED = 16 * 1024
"""Text whose worst-case JSON size is below this is not measured: it fits any share."""

_PATH_ARGUMENTS = ("path",)
_ACP_KINDS = {"read": "read", "edit": "edit", "search": "search", "execute": "execute"}
"""Engine tool kinds ACP has a kind for; any other is ACP's `other`."""


@cache
def _builtin_kinds() -> dict[str, str]:
    """Each built-in tool's ACP kind, from the tool's own declaration."""
    from engine.tools.builtins import builtin_tools

    return {tool.name: _ACP_KINDS.get(str(tool.kind), "other") for tool in builtin_tools()}


def tool_kind(name: str) -> str:
    """The ACP kind of a tool by name (an MCP tool is `other`)."""
    return _builtin_kinds().get(name, "other")


def json_size(value: Any) -> int:
    """Bytes `value` takes in a serialized message (`app.acp.rpc.serialize` writes the same)."""
    if isinstance(value, str) and len(value) * 12 + 2 <= MIN_MEASURED:
        return len(value) * 12 + 2  # an upper bound: no character takes more (an escaped pair)
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: the message is written with JSON escapes
        return len(json.dumps(value, separators=(",", ":")))


def _prefix_within(text: str, limit: int) -> int:
    """The length of the longest-found prefix of `text` whose JSON string takes at most `limit`
    bytes (at least one character, so splitting always advances)."""
    n = min(len(text), limit)
    while n > 1:
        size = json_size(text[:n])
        if size <= limit:
            return n
        n = max(1, min(n - 1, int(n * limit / size * 0.98)))
    return 1


def split_text(text: str, limit: int) -> list[str]:
    """`text` in pieces whose JSON strings each take at most `limit` bytes, in order."""
    if json_size(text) <= limit:
        return [text]
    pieces: list[str] = []
    rest = text
    while rest:
        n = _prefix_within(rest, limit)
        pieces.append(rest[:n])
        rest = rest[n:]
    return pieces


def cut_text(text: str, limit: int) -> str:
    """`text` if it fits in `limit` bytes as JSON, else its start with a marker saying what was
    cut (the full text stays in the session log)."""
    if json_size(text) <= limit:
        return text
    marker = f"\n[cut for the client: {{shown}} of {len(text):,} characters shown; the full text is in the session log]"
    n = _prefix_within(text, max(1, limit - json_size(marker) - 16))
    return text[:n] + marker.replace("{shown}", f"{n:,}")


@dataclass(slots=True)
class _Call:
    name: str
    output: str = ""
    terminal: str = ""
    """The client's terminal the call runs in (its output is shown there), if any."""


@dataclass(slots=True)
class _Ended:
    name: str
    status: str
    result: str
    terminal: str


@dataclass(slots=True)
class _Step:
    # what deltas streamed of the reply, in pieces joined when the reply comes (adding each
    # delta to a str copied the reply so far, once per delta)
    texts: list[str] = field(default_factory=list)
    reasonings: list[str] = field(default_factory=list)
    figures: Figures = field(default_factory=Figures.model_construct)
    output_chars: int = 0


def kept_lines(text: str) -> str:
    """A command's plain-text answer with its line breaks kept where a client renders Markdown
    (Toad, Zed): a single newline there joins the lines into one paragraph, a hard break (two
    spaces before it) does not."""
    return text.replace("\n", "  \n") if "\n" in text else text


@dataclass(slots=True)
class AcpProjection:
    """The translator's state: what the current step streamed and the tool calls still open."""

    workspace: str
    replaying: bool = False
    """True for `session/load`: direct user messages are shown too."""
    limit: int = UPDATE_LIMIT
    mode: PermissionMode = DEFAULT_MODE
    """The permission mode the log set last, of the events translated so far."""
    _step: _Step = field(default_factory=_Step)
    _calls: dict[str, _Call] = field(default_factory=dict)
    _ended: dict[str, _Ended] = field(default_factory=dict)
    """The step's calls that ended without a file record, for the `tool/changes` that follows
    their batch to add its files' diffs to what their result showed."""
    _rate: TokenRate | None = None
    """The last reported tokens per character: a step that reports none is estimated at it."""
    _costs: dict[str, float] = field(default_factory=dict)
    """The session's cost so far, by currency (`step/end`'s `cost`)."""
    _plans: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """The plan Areas by id, each with the entries last sent for it (none at first: an empty
    plan is not sent)."""
    _history: list[tuple[int, str | None, Any]] = field(default_factory=list)
    """(seq, None, mode) and (seq, plan Area id, entries), in log order: what a rewind goes back
    to (those outside `_rewound`)."""
    _rewound: RewoundIntervals = field(default_factory=RewoundIntervals)
    """The seqs the conversation rewinds so far took out of the history."""
    _seq: int | None = None
    """The seq of the stored event being translated (None for a live one): what a note that
    belongs to no step (a command's answer, a mode's fallback) takes its `messageId` from, the
    same live and replayed."""

    def apply(self, event: Event | LiveEvent) -> list[AcpUpdate]:
        """The updates `event` makes (none for most events). One lookup by the payload's exact
        class (payload classes are never subclassed), not a test per translated type."""
        translate = _TRANSLATORS.get(type(event.data))
        if translate is None:
            return []
        # by exact class: `getattr(event, "seq", None)` on a `LiveEvent` (every streamed delta)
        # goes through pydantic's `__getattr__` and the AttributeError it raises
        self._seq = event.seq if type(event) is Event else None
        return translate(self, event.data)

    def replay(self, events: Iterable[Event]) -> Iterator[AcpUpdate]:
        """The updates of stored events, direct user messages included; afterwards the
        projection goes on live from the same state (what `session/load` does)."""
        self.replaying = True
        translators = _TRANSLATORS
        try:
            for event in events:  # `apply`, inlined: a replay translates every stored event
                data = event.data
                translate = translators.get(type(data))
                if translate is not None:
                    self._seq = event.seq
                    yield from translate(self, data)
        finally:
            self.replaying = False

    # --- events --------------------------------------------------------------------------------

    def _user(self, message: UserMessage) -> list[AcpUpdate]:
        if not (self.replaying and message.source.is_user):
            return []  # live, the client holds the words it sent; injected context never shows
        updates = self._chunks("user_message_chunk", message.content)
        for attachment in message.attachments:
            updates.append(
                {"sessionUpdate": "user_message_chunk", "content": self._attachment(attachment)}
            )
        return updates

    def _step_start(self, start: StepStart) -> list[AcpUpdate]:
        self._step = _Step(figures=start.figures)
        self._ended.clear()
        return []

    def _delta(self, delta: AssistantDelta) -> list[AcpUpdate]:
        step = self._step
        step.texts.append(delta.text)
        step.reasonings.append(delta.reasoning)
        if not delta.reasoning:  # the usual delta: one piece of the reply
            return self._chunks(
                "agent_message_chunk", delta.text, message_id(delta.turn, delta.step)
            )
        return [
            *self._chunks(
                "agent_thought_chunk", delta.reasoning, message_id(delta.turn, delta.step, THOUGHT)
            ),
            *self._chunks("agent_message_chunk", delta.text, message_id(delta.turn, delta.step)),
        ]

    def _reset(self, _: AssistantReset) -> list[AcpUpdate]:
        self._step.texts.clear()
        self._step.reasonings.clear()
        return []

    def _reply(self, message: AssistantMessage) -> list[AcpUpdate]:
        """What the durable reply adds to what its deltas streamed (everything, on replay)."""
        step = self._step
        reasoning, text = message.reasoning, message.content
        if step.texts or step.reasonings:
            reasoning = _unstreamed(reasoning, "".join(step.reasonings))
            text = _unstreamed(text, "".join(step.texts))
            step.texts.clear()
            step.reasonings.clear()
        step.output_chars += reply_chars(message)
        reply = message_id(message.turn, message.step)
        if not reasoning:  # the usual reply: text alone
            return self._chunks("agent_message_chunk", text, reply)
        return [
            *self._chunks(
                "agent_thought_chunk", reasoning, message_id(message.turn, message.step, THOUGHT)
            ),
            *self._chunks("agent_message_chunk", text, reply),
        ]

    def _call(self, record: ToolCallRecord) -> list[AcpUpdate]:
        self._calls[record.call_id] = _Call(record.name)
        return [self.tool_call(record.call_id, record.name, record.arguments)]

    def _decision(self, decision: PermissionDecision) -> list[AcpUpdate]:
        if decision.decision != "allow" or decision.call_id not in self._calls:
            return []
        return [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": decision.call_id,
                "status": "in_progress",
            }
        ]

    def _output(self, delta: ToolOutputDelta) -> list[AcpUpdate]:
        call = self._calls.get(delta.call_id)
        if call is None or call.terminal:
            return []  # a call in the client's terminal: the terminal shows its output
        call.output = (call.output + delta.text)[-OUTPUT_TAIL:]
        return [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": delta.call_id,
                "status": "in_progress",
                "content": [_text_content(call.output)],
            }
        ]

    def _result(self, result: ToolResultRecord) -> list[AcpUpdate]:
        call = self._calls.pop(result.call_id, None)
        update: AcpUpdate = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": result.call_id,
            "status": "failed" if result.is_error else "completed",
        }
        if call is not None:
            update["kind"] = tool_kind(call.name)
        change = result.change
        if change is None:
            text = _text_content(cut_text(result.content, self.limit - 4096))
            terminal = call.terminal if call is not None else ""
            # a terminal stays beside the result: ACP clients keep showing a released one
            update["content"] = [_terminal_content(terminal), text] if terminal else [text]
            name = call.name if call is not None else ""
            self._ended[result.call_id] = _Ended(name, update["status"], result.content, terminal)
            return [update]
        # the diff stays beside the result: a client shows the last content it was sent
        path = self._absolute(change.path)
        update["locations"] = [{"path": path, "line": change.line}]
        budget = (self.limit - 8192) // 3
        summary = _text_content(cut_text(result.content, budget))
        diff = self.recorded_diff(change, budget)
        update["content"] = [diff, summary] if diff is not None else [summary]
        return [update]

    def _changes(self, record: ToolChanges) -> list[AcpUpdate]:
        """The files a batch's commands changed, as each command's completed update again: its
        result, then the files' unified diffs as text, with the paths in `locations`. ACP's
        `diff` content needs the whole new text, which the record does not hold (a checkpoint
        keeps it; the log keeps the unified diff): a `diff` drawn from part of a file would show
        a change the command did not make."""
        ended = self._ended
        calls = [(i, ended[i].name, None) for i in record.call_ids if i in ended]
        updates: list[AcpUpdate] = []
        located = LOCATED_FILES
        for call_id, files in batch_files(calls, record.files):
            call = ended[call_id]
            budget = (self.limit - 8192 - located * 1024) // 2
            diffs = "\n\n".join(f"{file_line(f)}:\n```diff\n{file_diff(f)}\n```" for f in files)
            content = [
                _text_content(cut_text(call.result, budget)),
                _text_content(cut_text(diffs, budget)),
            ]
            updates.append(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call_id,
                    "status": call.status,
                    "locations": [{"path": self._absolute(f.path)} for f in files[:located]],
                    "content": [_terminal_content(call.terminal), *content]
                    if call.terminal
                    else content,
                }
            )
        return updates

    def recorded_diff(self, change: FileChangeRecord, budget: int) -> dict[str, Any] | None:
        """The whole file's `diff` a change record holds (`oldText` null: the call created the
        file); None when its text is withheld or would not fit `budget` bytes a side."""
        old, new = change.old_text, change.new_text
        if new is None or (change.existed and old is None):
            return None
        return self.file_diff(change.path, old if change.existed else None, new, budget)

    def file_diff(self, path: str, old: str | None, new: str, budget: int) -> dict[str, Any] | None:
        """ACP's `diff` of the workspace file `path` (`oldText` null for a new file, which a
        client needs to draw it at all); None when a side would not fit `budget` bytes: a cut
        text would draw a change the call did not make."""
        if json_size(new) > budget or (old is not None and json_size(old) > budget):
            return None
        return {"type": "diff", "path": self._absolute(path), "oldText": old, "newText": new}

    def show_terminal(self, call_id: str, terminal_id: str) -> AcpUpdate | None:
        """The call runs in the client's terminal: the update that embeds it (live only, for
        the connection whose client created it; None once the call has ended)."""
        call = self._calls.get(call_id)
        if call is None:
            return None
        call.terminal = terminal_id
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "in_progress",
            "content": [_terminal_content(terminal_id)],
        }

    def preview(self, call_id: str, path: str, old: str | None, new: str) -> AcpUpdate | None:
        """The `tool_call_update` that shows a pending write or edit as the whole file before and
        after (`engine.tools.builtins.file_change`, read from the disk before the call runs),
        with the first changed line; None when it would not fit or the call has ended."""
        if call_id not in self._calls:
            return None
        diff = self.file_diff(path, old, new, (self.limit - 8192) // 2)
        if diff is None:
            return None
        line = first_changed_line(split_lines(old or ""), split_lines(new))
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "locations": [{"path": diff["path"], "line": line}],
            "content": [diff],
        }

    def _usage(self, end: StepEnd) -> list[AcpUpdate]:
        step = self._step
        counted = context_usage(
            step.figures, end.usage, output_chars=step.output_chars, rate=self._rate
        )
        self._rate = TokenRate.of(step.figures, end.usage) or self._rate
        used = counted.used
        size = max(used, counted.size)  # ACP's `used` may not exceed `size`
        usage = {
            "input_tokens": end.usage.input_tokens,
            "cache_read_tokens": end.usage.cache_read_tokens,
            "cache_write_tokens": end.usage.cache_write_tokens,
            "output_tokens": end.usage.output_tokens,
            "estimated": counted.estimated,
            "turn": end.turn,
            "step": end.step,
        }
        update: AcpUpdate = {"sessionUpdate": "usage_update", "used": used, "size": size}
        if end.cost is not None:
            costs = self._costs
            costs[end.cost.currency] = costs.get(end.cost.currency, 0.0) + end.cost.amount
        if len(self._costs) == 1:  # ACP's cost has one currency: a mixed total is not sent
            ((currency, amount),) = self._costs.items()
            update["cost"] = {"amount": amount, "currency": currency}
        update["_meta"] = {"trellis/usage": usage}
        return [update]

    def _retry(self, retry: Retry) -> list[AcpUpdate]:
        text = f"\n[retrying the request (attempt {retry.attempt}): {retry.reason}]\n"
        note = message_id(retry.turn, retry.step, f"retry-{retry.attempt}")
        return self._chunks("agent_thought_chunk", text, note)

    def _area(self, register: AreaRegister) -> list[AcpUpdate]:
        if register.kind == PLAN_KIND:
            self._plans[register.area] = []
        return []

    def _area_state(self, state: AreaState) -> list[AcpUpdate]:
        """The whole plan, each time its items change (ACP: the client replaces the plan)."""
        if state.area not in self._plans or state.state is None:
            return []
        entries = plan_entries(state.state)
        if entries is None or entries == self._plans[state.area]:
            return []
        self._plans[state.area] = entries
        self._remember(state.area, entries)
        return [{"sessionUpdate": "plan", "entries": entries}]

    def _rewind(self, rewind: SessionRewind) -> list[AcpUpdate]:
        """A message saying so (the prompt it went back before, quoted), then the mode and the
        plans as they were before that prompt, where they differ from what the client holds."""
        said = rewind_line(rewind)
        if rewind.undoes is not None:
            text = f"{said}: the session is as it was before that rewind"
        else:
            text = f"{said}; the session is as it was before:\n\n> " + "\n> ".join(
                rewind.prompt.splitlines() or [""]
            )
        files = rewind_files(rewind)
        if files:
            text += "\n\n" + "\n".join(f"- {line}" for line in files)
        updates = self._chunks("agent_message_chunk", text + "\n", self._note_id("rewind"))
        if not rewind.conversation:
            return updates
        # the history as the engine rebuilds it: the log less every rewound interval (an undo
        # brings back the one it undoes)
        rewound = self._rewound
        if self._seq is not None:
            rewound.take(rewind.to_seq, self._seq, undoes=rewind.undoes)
        mode: PermissionMode = DEFAULT_MODE
        plans: dict[str, list[dict[str, Any]]] = {area: [] for area in self._plans}
        for seq, key, value in self._history:
            if seq in rewound:
                continue
            if key is None:
                mode = value
            else:
                plans[key] = value
        if mode != self.mode:
            self.mode = mode
            updates.append({"sessionUpdate": "current_mode_update", "currentModeId": mode})
        for area, entries in plans.items():
            if entries != self._plans[area]:
                self._plans[area] = entries
                updates.append({"sessionUpdate": "plan", "entries": entries})
        return updates

    def _remember(self, key: str | None, value: Any) -> None:
        """A mode (`key` None) or a plan's entries set by the stored event being translated, for
        a rewind to go back to."""
        if self._seq is not None:
            self._history.append((self._seq, key, value))

    def _title(self, title: SessionTitle) -> list[AcpUpdate]:
        return [{"sessionUpdate": "session_info_update", "title": title.title}]

    def _mode(self, change: PermissionModeSet) -> list[AcpUpdate]:
        self.mode = change.mode
        self._remember(None, change.mode)
        update: AcpUpdate = {"sessionUpdate": "current_mode_update", "currentModeId": change.mode}
        if not change.resumed:
            return [update]
        said = "The mode is ask: approve all ends when a session is reopened.\n"
        return [update, *self._chunks("agent_message_chunk", said, self._note_id("mode"))]

    def _command(self, command: CommandRun) -> list[AcpUpdate]:
        """The exchange as the client saw it live: the prompt it sent (shown again when
        replaying) and the answer the agent gave as a message."""
        asked = self._chunks("user_message_chunk", command.line) if self.replaying else []
        result = kept_lines(command.result)
        answer = self._chunks("agent_message_chunk", result, self._note_id("command"))
        return [*asked, *answer]

    def _note_id(self, kind: str) -> str | None:
        """The `messageId` of a note of `kind` from the stored event being translated."""
        return None if self._seq is None else f"{kind}-{self._seq}"

    # --- text ----------------------------------------------------------------------------------

    def coalesced(self, updates: list[AcpUpdate]) -> list[AcpUpdate]:
        """`updates` with each run of adjacent streamed text chunks of one kind joined into as
        few chunks as fit: the same text in the same order, in fewer messages. For a bridge that
        fell behind, so the deltas that waited go out together."""
        if len(updates) < 2:
            return updates
        joined: list[AcpUpdate] = []
        run: list[AcpUpdate] = []
        for update in updates:
            if run and not _same_stream(run[-1], update):
                joined += self._joined(run)
                run = []
            if update["sessionUpdate"] in _STREAMED_KINDS and _is_text_chunk(update):
                run.append(update)
            else:
                joined.append(update)
        return joined + self._joined(run)

    def _joined(self, run: list[AcpUpdate]) -> list[AcpUpdate]:
        if len(run) < 2:
            return run
        text = "".join(update["content"]["text"] for update in run)
        return self._chunks(run[0]["sessionUpdate"], text, run[0].get("messageId"))

    def _chunks(self, kind: str, text: str, message: str | None = None) -> list[AcpUpdate]:
        """`text` as `kind` updates (`agent_message_chunk`, ...), split so that each fits, each
        with the `messageId` of the message it belongs to (if any)."""
        if not text:
            return []
        limit = self.limit - 256
        bound = len(text) * 12 + 2  # what `split_text` finds short text to take, unmeasured
        pieces = [text] if bound <= MIN_MEASURED and bound <= limit else split_text(text, limit)
        if message is None:
            return [
                {"sessionUpdate": kind, "content": {"type": "text", "text": piece}}
                for piece in pieces
            ]
        return [
            {
                "sessionUpdate": kind,
                "content": {"type": "text", "text": piece},
                "messageId": message,
            }
            for piece in pieces
        ]

    def _attachment(self, attachment: Attachment) -> dict[str, Any]:
        """A resource block: a link the client sent (without its contents), or the text."""
        uri = attachment.uri or f"trellis:attachment/{attachment.name}"
        if not attachment.text:
            link = {"type": "resource_link", "name": attachment.name, "uri": uri}
            if attachment.mime_type:
                link["mimeType"] = attachment.mime_type
            return link
        resource = {"uri": uri, "text": cut_text(attachment.text, self.limit - 1024)}
        if attachment.mime_type:
            resource["mimeType"] = attachment.mime_type
        return {"type": "resource", "resource": resource}

    # --- tools ---------------------------------------------------------------------------------

    def tool_call(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> AcpUpdate:
        """The `tool_call` that shows a call: title, kind, locations, input, a diff for edits."""
        args = dict(arguments)
        budget = max(1024, (self.limit - 4096) // max(1, _text_fields(args) + 2))
        kind = tool_kind(name)
        update: AcpUpdate = {
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": _title(name, args),
            "kind": kind,
            "status": "pending",
        }
        locations = self._locations(args)
        if locations:
            update["locations"] = locations
        update["rawInput"] = _cut_strings(args, budget)
        diff = self._diff(kind, args, budget)
        if diff is not None:
            update["content"] = [diff]
        return update

    def _locations(self, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for key in _PATH_ARGUMENTS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                found.append({"path": self._absolute(value)})
        return found

    def _absolute(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workspace, path))

    def _diff(self, kind: str, arguments: dict[str, Any], budget: int) -> dict[str, Any] | None:
        """The `diff` an edit shows (`kind` is the tool's ACP kind)."""
        path = arguments.get("path")
        if not isinstance(path, str) or kind != "edit":
            return None
        old = arguments.get("old")
        new = arguments.get("new", arguments.get("content"))
        if not isinstance(new, str):
            return None
        diff: dict[str, Any] = {"type": "diff", "path": self._absolute(path)}
        if isinstance(old, str):
            diff["oldText"] = cut_text(old, budget)
        diff["newText"] = cut_text(new, budget)
        return diff


_TRANSLATORS: dict[type[Payload], Callable[[AcpProjection, Any], list[AcpUpdate]]] = {
    UserMessage: AcpProjection._user,
    StepStart: AcpProjection._step_start,
    AssistantDelta: AcpProjection._delta,
    AssistantReset: AcpProjection._reset,
    AssistantMessage: AcpProjection._reply,
    ToolCallRecord: AcpProjection._call,
    PermissionDecision: AcpProjection._decision,
    ToolOutputDelta: AcpProjection._output,
    ToolResultRecord: AcpProjection._result,
    ToolChanges: AcpProjection._changes,
    StepEnd: AcpProjection._usage,
    Retry: AcpProjection._retry,
    SessionTitle: AcpProjection._title,
    PermissionModeSet: AcpProjection._mode,
    CommandRun: AcpProjection._command,
    SessionRewind: AcpProjection._rewind,
    AreaRegister: AcpProjection._area,
    AreaState: AcpProjection._area_state,
}
"""The payload types a client sees, each with what translates it; the rest show nothing."""


THOUGHT = "thought"
"""What a step's reasoning adds to the id of its reply: the thought is a message of its own."""


@lru_cache(maxsize=64)
def message_id(turn: int, step: int, part: str = "") -> str:
    """The `messageId` of what step `step` of turn `turn` says (`part`: a thought, a retry note):
    the same for every chunk of it, live or replayed, and another for every other message.
    Cached: every streamed delta of a step asks for the same one."""
    base = f"{turn}.{step}"  # short: every streamed chunk carries it
    return f"{base}.{part}" if part else base


PLAN_KIND = "plan"
"""The kind a plan Area registers with (`PlanArea.kind`)."""

PLAN_PRIORITY = "medium"
"""ACP wants a priority per entry; Trellis's plan items have none."""


def plan_entries(snapshot: dict[str, Any]) -> list[dict[str, Any]] | None:
    """ACP's plan entries from a plan Area's snapshot (`PlanArea.snapshot`: items as
    `[id, text, done]`); None for a snapshot of another shape (an Area of kind `plan` that is
    not Trellis's)."""
    items = snapshot.get("items")
    if not isinstance(items, list):
        return None
    entries: list[dict[str, Any]] = []
    for item in items:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[1], str)):
            return None
        entries.append(
            {
                "content": item[1],
                "priority": PLAN_PRIORITY,
                "status": "completed" if item[2] else "pending",
            }
        )
    return entries


_STREAMED_KINDS = frozenset(("agent_message_chunk", "agent_thought_chunk"))
"""The chunks a reply streams as, which `AcpProjection.coalesced` may join."""


def _is_text_chunk(update: AcpUpdate) -> bool:
    """A chunk that is plain text and nothing else (no `_meta`, no annotations; its message's
    id)."""
    content = update.get("content")
    return (
        len(update) == (3 if "messageId" in update else 2)
        and isinstance(content, dict)
        and len(content) == 2
        and content.get("type") == "text"
        and isinstance(content.get("text"), str)
    )


def _same_stream(previous: AcpUpdate, update: AcpUpdate) -> bool:
    return (
        update["sessionUpdate"] == previous["sessionUpdate"]
        and update.get("messageId") == previous.get("messageId")
        and _is_text_chunk(update)
    )


def _unstreamed(full: str, streamed: str) -> str:
    if not streamed:
        return full
    return full[len(streamed) :] if full.startswith(streamed) else ""


def _terminal_content(terminal_id: str) -> dict[str, Any]:
    return {"type": "terminal", "terminalId": terminal_id}


def _text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def _title(name: str, arguments: dict[str, Any]) -> str:
    """`read_file src/app.py`, `run_shell: pytest -q`: the tool and what it acts on."""
    for key in ("command", "path", "pattern"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            shown = (
                value if len(value) <= TITLE_ARGUMENT_CHARS else value[:TITLE_ARGUMENT_CHARS] + "…"
            )
            return f"{name}: {shown}" if key == "command" else f"{name} {shown}"
    return name


def _text_fields(arguments: dict[str, Any]) -> int:
    return sum(1 for value in arguments.values() if isinstance(value, str))


def _cut_strings(arguments: dict[str, Any], budget: int) -> dict[str, Any]:
    """The arguments with each long string cut to `budget` bytes; other values as they are,
    unless the whole input is still over the budget (then a marker stands for it)."""
    cut = {k: cut_text(v, budget) if isinstance(v, str) else v for k, v in arguments.items()}
    if not _small_beside(cut, budget) and json_size(cut) > budget * (len(cut) + 1):
        return {"_trellis": "the input is too large for the client; it is in the session log"}
    return cut


def _small_beside(cut: dict[str, Any], budget: int) -> bool:
    """Whether `cut` surely fits `budget` bytes per value plus one more without measuring it:
    its strings are already within the budget each, so only the keys and the scalars beside
    them count (the usual tool input; measuring it was a `json.dumps` per `tool_call`)."""
    other = 2
    for key, value in cut.items():
        if isinstance(value, bool) or value is None:
            scalar = 5
        elif (isinstance(value, int) and value.bit_length() < 64) or isinstance(value, float):
            scalar = 32
        elif isinstance(value, str):
            scalar = 0
        else:
            return False
        other += len(key) * 12 + 4 + scalar
    return other <= budget


def replay_updates(events: Iterable[Event], workspace: str) -> Iterator[AcpUpdate]:
    """A stored session as `session/load` sends it: every update, in log order."""
    return AcpProjection(workspace).replay(events)
