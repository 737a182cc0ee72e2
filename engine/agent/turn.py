"""One turn: exactly one run of the model loop (spec: context-injection, "one send, one turn").

A step, in order: drain the outbox -> `CoopContext.render()` -> assemble (orchestrator, egress gate)
-> `step/start` -> the request -> deltas -> `assistant/message` -> `tool/call`s and their
`tool/result`s in the model's order -> drain the outbox -> `step/end`. The turn continues while there
were tool calls or steering arrived.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.agent.retry import with_retries
from engine.context.budget import ContextBudgetExceededError
from engine.context.egress import EgressRefusedError
from engine.events import (
    AssistantMessage,
    AssistantReset,
    Finish,
    PermissionDecision,
    PermissionRequest,
    PermissionRule,
    Retry,
    StepEnd,
    ToolCallRecord,
    ToolOutputDelta,
    ToolPending,
    ToolResultRecord,
    TurnEnd,
    TurnEndReason,
    Usage,
    assistant_delta,
)
from engine.gateway.base import (
    FinishDelta,
    GatewayError,
    ModelRequest,
    ProviderStateDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from engine.invariants import UnstorableEventError
from engine.message import ToolCall
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.tools import ToolOutput, unstorable_output
from engine.tools.permission import PermissionQuestion

if TYPE_CHECKING:
    from engine.agent.runtime import Runtime

log = logging.getLogger(__name__)

CANCELLED_TOOL_RESULT = "Cancelled: the turn ended before this tool call finished."


@dataclass(slots=True)
class _Streamed:
    """What a running call has streamed (`tool/output`), its first `limit` characters kept: a call
    cancelled before it finished returns them, so the model, the log and every view keep what the
    command printed before it was stopped."""

    limit: int
    parts: list[str] = field(default_factory=list)
    kept: int = 0
    total: int = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))

    def text(self) -> str:
        kept = "".join(self.parts).rstrip("\n")
        if self.total > self.kept:
            kept += f"\n[output truncated: {self.kept} of {self.total} characters shown]"
        return kept


@dataclass(slots=True)
class _Reply:
    """An assistant reply accumulated from stream deltas.

    The text and the reasoning are kept as their streamed pieces and joined when read: adding
    each delta to a `str` copied the whole reply so far, once per delta."""

    texts: list[str] = field(default_factory=list)
    reasonings: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    finish: Finish = "stop"
    provider_state: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(self.texts)

    @property
    def reasoning(self) -> str:
        return "".join(self.reasonings)

    def tool_calls(self, turn: int, step: int) -> list[tuple[ToolCall, str | None]]:
        """The calls in the model's order, each with a parse error for bad argument JSON."""
        calls: list[tuple[ToolCall, str | None]] = []
        for index in sorted(self.calls):
            fragment = self.calls[index]
            call_id = fragment["id"] or f"call_{turn}_{step}_{index}"
            raw = fragment["arguments"].strip() or "{}"
            error: str | None = None
            try:
                arguments = json.loads(raw)
                if not isinstance(arguments, dict):
                    raise ValueError(f"expected a JSON object, got {type(arguments).__name__}")
            except ValueError as exc:
                arguments = {}
                error = f"Error: the arguments of {fragment['name']!r} are not a JSON object ({exc}): {raw[:200]}"
            calls.append((ToolCall(call_id, fragment["name"], arguments), error))
        return calls


class _TurnEnded(Exception):
    """Ends the turn early with a reason other than completion."""

    def __init__(self, reason: TurnEndReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class Turn:
    """Runs one admitted prompt to its `turn/end`; never raises for a turn that ended badly."""

    def __init__(self, runtime: Runtime, number: int) -> None:
        self.rt = runtime
        self.number = number
        self.step = 0
        self._step_open = False
        self._pending: list[ToolCall] = []  # tool calls of the open step without a result yet
        self._tasks: dict[str, asyncio.Task[ToolOutput]] = {}
        self._streamed: dict[str, _Streamed] = {}  # by call id: the output each call streamed
        self._asking: set[str] = set()  # calls waiting for a permission answer
        self.end_reason: TurnEndReason = "completed"
        self.end_message = ""
        self.cancel_reason: TurnEndReason = "cancelled"
        self.closing = False  # `_close` has begun: there is nothing left to stop
        self.ended = False  # `turn/end` is in the log: input no longer belongs to this turn
        self.ending = False  # `turn/end` is being appended: steering is a new send from here
        self._stopping = False
        self._task: asyncio.Task[Any] | None = None
        self._streaming: _Reply | None = None  # the reply being streamed, until it is logged
        self._label: PrivatizationLabel | None = None  # the joined label of the open step's request

    def stop(self, reason: TurnEndReason) -> None:
        """End the turn early with `reason`: at once if its loop runs, else as soon as it starts.

        A task cancelled before its first step never enters `run()`, which would leave the turn
        open in the log; so an unstarted turn is only marked, and `run()` ends it at once.
        """
        if self.closing:
            return
        self.cancel_reason = reason
        self._stopping = True
        if self._task is not None:
            self._task.cancel()

    async def run(self) -> TurnEndReason:
        self._task = asyncio.current_task()
        reason: TurnEndReason
        message = ""
        try:
            if self._stopping:
                raise _TurnEnded(self.cancel_reason, self._stop_message())
            await self._loop()
            reason = "completed"
        except asyncio.CancelledError:
            reason, message = self.cancel_reason, self._stop_message()
        except _TurnEnded as ended:
            reason, message = ended.reason, ended.message
        except ContextBudgetExceededError as exc:
            reason, message = "budget", str(exc)
        except EgressRefusedError as exc:
            reason, message = "egress", str(exc)
        except GatewayError as exc:
            reason, message = "error", self.rt.report_error(self.number, str(exc))
        except Exception as exc:
            log.exception("turn %d failed", self.number)
            reason = "error"
            message = self.rt.report_error(self.number, f"{type(exc).__name__}: {exc}")
        message = self.rt.redact(message)  # an exception's text may quote a secret
        self._close(reason, message)
        self.end_reason, self.end_message = reason, message
        return reason

    def _stop_message(self) -> str:
        return (
            "Cancelled by the user."
            if self.cancel_reason == "cancelled"
            else "The agent was closed."
        )

    async def _loop(self) -> None:
        rt = self.rt
        while True:
            if self.step >= rt.options.max_steps:
                raise _TurnEnded(
                    "max_steps", f"The turn reached its limit of {rt.options.max_steps} steps."
                )
            self.step += 1
            # 1. drain the outbox: contexts and steering staged since the last boundary
            rt.drain_outbox()
            # 2. collection and area renders
            rt.render_areas(self.number)
            # 3. assemble the request (budget and egress may end the turn here)
            assembled = rt.assemble(self.number)
            egress = rt.assembler.egress
            tools = rt.tool_specs()
            offered = rt.offer_tools(tools)
            prefix, request_chars = rt.measure_prefix(assembled)
            breaks = rt.assembler.take_breaks(turn=self.number, step=self.step)
            rt.log_step_start(
                breaks,
                assembled.step_start(
                    turn=self.number,
                    step=self.step,
                    egress=egress,
                    tools=offered,
                    prefix_chars=prefix,
                    request_chars=request_chars,
                ),
            )
            self._step_open = True
            self._label = assembled.label
            await rt.session.flush()  # durable: before a model request
            request = ModelRequest(
                model=rt.model_id, system=assembled.system, items=assembled.items, tools=tools
            )
            reply = await self._request(request)
            calls = reply.tool_calls(self.number, self.step)
            self._record_reply(reply, calls, reply.finish)
            if calls:
                await self._run_tools(calls)
            # 4. drain after the complete batch of results, never between a call and its result
            steered = rt.drain_outbox()
            rt.session.append(
                StepEnd(
                    turn=self.number,
                    step=self.step,
                    usage=reply.usage,
                    cost=rt.assembler.step_cost(reply.usage),
                )
            )
            self._step_open = False
            # durable: step end. The flush that follows with no await between takes it: the
            # next step's, before its model request, or the turn end's; so nothing can happen
            # between the step's end and its flush, and one transaction does for both.
            if not calls and not steered:
                # a reply cut off at the output limit or refused ends the turn with that reason
                if reply.finish == "length":
                    raise _TurnEnded("max_tokens", "The model stopped at its output limit.")
                if reply.finish == "refusal":
                    raise _TurnEnded("refusal", "The model refused to answer.")
                return

    async def _request(self, request: ModelRequest) -> _Reply:
        def retrying(number: int, exc: GatewayError) -> None:
            streamed = self._streaming
            if streamed is not None and (streamed.text or streamed.reasoning or streamed.calls):
                # what the failed attempt streamed is not in the log: withdraw it from screens
                self.rt.session.emit(AssistantReset(turn=self.number, step=self.step))
            self.rt.session.append(
                Retry(turn=self.number, step=self.step, attempt=number, reason=str(exc))
            )

        rt = self.rt
        return await with_retries(
            lambda: self._stream(request),
            max_retries=rt.max_retries,
            backoff=rt.options.retry_backoff,
            on_retry=retrying,
        )

    def _record_reply(
        self, reply: _Reply, calls: list[tuple[ToolCall, str | None]], finish: Finish
    ) -> None:
        """Log the assistant message and put it into the Context."""
        self._streaming = None
        event = self.rt.session.append(
            AssistantMessage(
                turn=self.number,
                step=self.step,
                content=reply.text,
                reasoning=reply.reasoning,
                tool_calls=tuple(call for call, _ in calls),
                model=self.rt.model_id,
                usage=reply.usage,
                finish=finish,
                provider_state=reply.provider_state,
                label=self._label,
            )
        )
        self.rt.emplace(event)

    async def _stream(self, request: ModelRequest) -> _Reply:
        reply = _Reply()
        self._streaming = reply  # a new attempt replaces what a failed one streamed
        session = self.rt.session
        async for delta in self.rt.gateway.stream(request):
            match delta:
                case TextDelta(text=text):
                    reply.texts.append(text)
                    session.emit(assistant_delta(self.number, self.step, text=text))
                case ReasoningDelta(text=text):
                    reply.reasonings.append(text)
                    session.emit(assistant_delta(self.number, self.step, reasoning=text))
                case ToolCallDelta(index=index, id=call_id, name=name, arguments=arguments):
                    fragment = reply.calls.setdefault(
                        index, {"id": "", "name": "", "arguments": ""}
                    )
                    fragment["id"] = fragment["id"] or call_id
                    fragment["name"] = fragment["name"] or name
                    fragment["arguments"] += arguments
                    session.emit(
                        ToolPending(
                            turn=self.number,
                            step=self.step,
                            index=index,
                            call_id=fragment["id"],
                            name=fragment["name"],
                            arguments=fragment["arguments"],
                        )
                    )
                case UsageDelta(usage=usage):
                    reply.usage = usage
                case FinishDelta(finish=finish):
                    reply.finish = finish
                case ProviderStateDelta(state=state):
                    reply.provider_state.update(state)
        return reply

    async def _run_tools(self, calls: list[tuple[ToolCall, str | None]]) -> None:
        """Run the batch concurrently; append each result in the model's order."""
        rt = self.rt
        for call, _ in calls:
            rt.session.append(
                ToolCallRecord(
                    turn=self.number,
                    step=self.step,
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                    label=self._label,  # part of the reply: labelled like the request it answers
                )
            )
            self._pending.append(call)
            rt.note_tool_call(call)
        await rt.session.flush()  # durable: before a tool runs
        tools = [rt.tools.get(call.name) for call, error in calls if error is None]
        before = await rt.checkpointing.before_batch(self.number, tools)
        for call, error in calls:
            self._tasks[call.id] = asyncio.create_task(self._run_tool(call, error, len(calls)))
        for call, _ in calls:
            output = await self._tasks[call.id]
            self._append_result(call, output)
        ids = [call.id for call, _ in calls]
        changes = await rt.checkpointing.after_batch(self.number, self.step, ids, before)
        if changes is not None:
            rt.session.append(changes)

    async def _run_tool(
        self, call: ToolCall, argument_error: str | None, batch_size: int
    ) -> ToolOutput:
        rt = self.rt
        if argument_error is not None:
            return ToolOutput.error(argument_error)
        tool = rt.tools.get(call.name)
        if tool is not None and tool.needs_permission:
            self._asking.add(call.id)
            question = PermissionQuestion(
                call_id=call.id, tool=call.name, arguments=call.arguments, kind=tool.kind
            )
            asked = False

            def ask() -> None:
                nonlocal asked
                asked = True
                self._announce(question)

            try:
                decision = await rt.permission.decide(question, ask)
            finally:
                if asked:
                    rt.waiting_for_permission(False)
            self._asking.discard(call.id)
            rt.session.append(PermissionDecision(call_id=call.id, decision=decision.decision))
            if decision.rule is not None:
                rt.session.append(PermissionRule(tool=call.name, decision=decision.rule))
            # durable: before a tool runs, the answer the user gave is durable (an "always"
            # rule included), even if the process dies while the tool runs
            await rt.session.flush()
            if decision.decision != "allow":
                return ToolOutput.error(
                    decision.message or f"Permission to run {call.name} was denied."
                )

        def output(text: str) -> None:
            streamed.add(text)
            rt.session.emit(
                ToolOutputDelta(turn=self.number, step=self.step, call_id=call.id, text=text)
            )

        context = rt.tool_context(call.id, batch_size, output)
        streamed = self._streamed[call.id] = _Streamed(context.max_output)
        return await rt.tools.call(call.name, call.arguments, context)

    def _announce(self, question: PermissionQuestion) -> None:
        """The status goes `waiting` and `permission/request` is sent, only when the question
        reaches the responder (a standing rule answers without asking)."""
        self.rt.waiting_for_permission(True)
        self.rt.session.emit(
            PermissionRequest(
                turn=self.number,
                step=self.step,
                call_id=question.call_id,
                tool=question.tool,
                arguments=dict(question.arguments),
                kind=str(question.kind),
            )
        )

    def _append_result(self, call: ToolCall, output: ToolOutput, *, ran: bool = True) -> None:
        """Log a result in order; contexts and hooks follow only results of calls that ran."""
        rt = self.rt

        def record(output: ToolOutput) -> ToolResultRecord:
            return ToolResultRecord(
                turn=self.number,
                step=self.step,
                call_id=call.id,
                content=output.content,
                is_error=output.is_error,
                label=output.label,
                change=output.change,
            )

        try:
            event = rt.session.append(record(output))
        except UnstorableEventError as exc:  # the model reads why, the turn goes on
            output = unstorable_output(output, call.name, exc.reason)
            event = rt.session.append(record(output))
        self._pending.remove(call)
        rt.emplace(event)
        if not ran:
            return
        for context in output.additional_contexts:
            rt.outbox.stage(context)
        for context in rt.run_tool_hooks(call, output):
            rt.outbox.stage(context)

    def _cancelled(self, call: ToolCall) -> ToolOutput:
        """The result of a call the turn ended before it finished: what it streamed, then why
        it stopped. Streamed output is a command's (run_shell's, or a front end's terminal), so it
        carries the shell's class, as a finished command's result does."""
        streamed = self._streamed.get(call.id)
        if streamed is None or not streamed.total:
            return ToolOutput.error(CANCELLED_TOOL_RESULT)
        shell = PrivatizationLabel.of(self.rt.assembler.shell_class)
        return ToolOutput(
            f"{streamed.text()}\n{CANCELLED_TOOL_RESULT}",
            is_error=True,
            label=PrivatizationLabel.of(PrivacyClass.internal).join(shell),
        )

    def _close(self, reason: TurnEndReason, message: str) -> None:
        """Synthetic results for calls that never finished, then step/end and turn/end."""
        self.closing = True
        partial = self._streaming
        if partial is not None and self._step_open and (partial.text or partial.reasoning):
            # what the user already saw streaming stays in the log, marked unfinished
            partial.calls.clear()
            self._record_reply(
                partial, [], "cancelled" if reason in ("cancelled", "disposed") else "error"
            )
        for running in self._tasks.values():
            if not running.done():
                running.cancel()
        for call_id in sorted(self._asking):
            # spec: a pending permission request resolves as cancelled with its turn
            self.rt.session.append(PermissionDecision(call_id=call_id, decision="cancelled"))
        self._asking.clear()
        for call in list(self._pending):
            task = self._tasks.get(call.id)
            if (
                task is not None
                and task.done()
                and not task.cancelled()
                and task.exception() is None
            ):
                self._append_result(call, task.result())
            else:
                self._append_result(call, self._cancelled(call), ran=False)
        if self._step_open:
            self.rt.session.append(StepEnd(turn=self.number, step=self.step))
            self._step_open = False
        self.ending = True
        self.rt.session.append(TurnEnd(turn=self.number, reason=reason, message=message))
        self.ended = True
        # after an early end the outbox may hold anything; after completion only contexts staged
        # during the last flush. Either way they are committed, never lost.
        self.rt.settle_outbox(reason)
