"""The Agent: one session's model loop behind `send`, `steer`, `inject` and `cancel`.

Front ends use this API and the session's event stream; nothing here knows a front end. Turns run
one at a time from a FIFO inbox; `inject` never starts one (spec: context-injection).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path

from engine.agent.admission import Allow, Block, PromptListener, PromptSubmission, run_admission
from engine.agent.assembler import Assembler
from engine.agent.compactor import DEFAULT_KEEP_GROUPS, CompactionResult, compact
from engine.agent.options import AgentOptions
from engine.agent.outbox import Outbox, Steering
from engine.agent.subtask import SubtaskDoneTool
from engine.agent.turn import Turn
from engine.context import (
    Context,
    CoopContext,
    RebuiltContext,
    UnrestorableArea,
    emplace_event,
    rebuild_context,
    resume_coop_context,
)
from engine.context.area import AreaLifeState, ContextAreaImplementation, RestorableArea
from engine.context.areas import BUILTIN_KINDS, SubtaskArea
from engine.context.orchestrator import AssembledContext
from engine.events import (
    AgentError,
    AgentQueued,
    AgentStatus,
    AgentStatusChanged,
    Attachment,
    Event,
    GcCollect,
    MessageData,
    OutboxChanged,
    Payload,
    PinAdd,
    PinRemove,
    SessionTitle,
    SteerDropped,
    ToolCallRecord,
    ToolResultRecord,
    TurnEndReason,
    TurnStart,
    UserMessage,
)
from engine.gateway.base import Gateway, ToolSpec
from engine.message import AdditionalContext, Role, Source, ToolCall
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.session import Session, Subscriber
from engine.tools import ToolContext, ToolOutput, ToolRegistry
from engine.tools.permission import PermissionBroker

log = logging.getLogger(__name__)

ToolHook = Callable[[ToolCall, ToolOutput], Iterable[AdditionalContext]]
GatewayFactory = Callable[[str], tuple[Gateway, str]]
"""Makes the gateway (and the provider's model id) for a configured model entry name."""

USER_LABEL = PrivatizationLabel(cls=PrivacyClass.internal)


class AgentClosedError(RuntimeError):
    """The agent was disposed; it takes no more input."""


class Agent:
    """One session's agent. Build it with `engine.agent.open_agent`."""

    def __init__(
        self,
        *,
        session: Session,
        gateway: Gateway,
        model_id: str,
        workspace: Path,
        tools: ToolRegistry,
        permission: PermissionBroker,
        assembler: Assembler,
        rebuilt: RebuiltContext | None = None,
        area_kinds: Mapping[str, type[RestorableArea]] = BUILTIN_KINDS,
        gateway_factory: GatewayFactory | None = None,
        options: AgentOptions | None = None,
        fork: Callable[[int], Awaitable[str]] | None = None,
        on_dispose: Sequence[Callable[[], Awaitable[None]]] = (),
    ) -> None:
        self.session = session
        self.gateway = gateway
        self.model_id = model_id
        self.workspace = workspace
        self.tools = tools
        self.permission = permission
        self.assembler = assembler
        self.options = options or AgentOptions()
        self._gateway_factory = gateway_factory
        self._gateway_model = assembler.binding.name  # the model entry `gateway` was made for
        self._fork = fork
        self._on_dispose = tuple(on_dispose)
        self.unrestored_areas: tuple[UnrestorableArea, ...] = ()
        if rebuilt is None:
            self.coop = CoopContext(Context(gateway.gateway_type), sink=self._sink)
        else:
            resumed = resume_coop_context(rebuilt, area_kinds, sink=self._sink)
            self.coop, self.unrestored_areas = resumed.coop, resumed.unrestored
        self.outbox = Outbox(self._outbox_changed)
        self._listeners: list[PromptListener] = []
        self._tool_hooks: list[ToolHook] = []
        self._inbox: deque[PromptSubmission] = deque()
        self._kept_steering: list[Steering] = []
        self._keep_inbox = False
        self._preparing = False  # a dequeued submission is being admitted or its turn opened
        self._cancel_before_start: TurnEndReason | None = None
        self._runner: asyncio.Task[None] | None = None
        self._turn: Turn | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        self._tool_names: dict[str, str] = {}
        self._status: AgentStatus = "idle"
        self._closed = False
        self._titled: bool | None = None  # whether the log carries a session/title
        for event in session.events:
            if isinstance(event.data, ToolCallRecord):
                self._tool_names[event.data.call_id] = event.data.name
        for area in self.coop.areas:
            if isinstance(area, SubtaskArea) and area.active:
                self._offer_subtask_done(area)

    # --- public API ----------------------------------------------------------------------------

    @property
    def context(self) -> Context:
        return self.coop.context

    @property
    def status(self) -> AgentStatus:
        return self._status

    @property
    def turn_open(self) -> bool:
        """A turn runs and takes input (false again from its `turn/end` on)."""
        return self._turn is not None and not self._turn.ended

    @property
    def model_name(self) -> str:
        return self.assembler.binding.name

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Every durable and live event of this session, as it happens."""
        return self.session.subscribe(subscriber)

    def send(self, text: str, attachments: Sequence[Attachment] = ()) -> None:
        """Queue direct user input; each send is exactly one turn."""
        self._check_open()
        if not isinstance(text, str):
            raise TypeError(f"send() takes str, not {type(text).__name__}")
        self._inbox.append(PromptSubmission(content=text, attachments=tuple(attachments)))
        self._queued_changed()
        if self._runner is None:
            self._runner = asyncio.create_task(self._run_inbox(), name=f"agent-{self.session.id}")

    def steer(self, text: str) -> None:
        """Deliver words into the running turn at its next safe boundary; when idle, a send."""
        self._check_open()
        if not isinstance(text, str):
            raise TypeError(f"steer() takes str, not {type(text).__name__}")
        turn = self._turn
        if turn is not None and not turn.ended and not turn.ending:
            self.outbox.stage(Steering(text))
        else:
            # from turn/end on (a subscriber of turn/end included) steering is a new send
            self.send(text)

    def inject(self, context: AdditionalContext) -> None:
        """Add model-facing context: staged during a turn, appended and flushed when idle."""
        self._check_open()
        if not isinstance(context, AdditionalContext):
            raise TypeError(f"inject() takes an AdditionalContext, not {type(context).__name__}")
        if context.source.is_user:
            raise ValueError(
                "inject() refuses Source('user'): injected context is never the user's own words"
            )
        if self.turn_open:
            self.outbox.stage(context)
            return
        # spec: idle inject appends one sourced user/message and starts a flush; no turn, no model
        self.append_user(context.content, context.source)
        flush = asyncio.create_task(self._idle_flush())
        self._flushes.add(flush)
        flush.add_done_callback(self._flushes.discard)

    def cancel(self, keep_inbox: bool = False) -> None:
        """End the running turn `cancelled`; staged steering is kept or dropped (and reported)."""
        self._stop_turn("cancelled", keep_inbox)

    async def when_idle(self) -> None:
        """Wait until no turn runs, no send is queued and every idle flush has settled."""
        while True:
            if self._runner is not None:
                await asyncio.shield(self._runner)
                continue
            if not self._flushes:
                return
            await asyncio.gather(*tuple(self._flushes), return_exceptions=True)

    async def dispose(self) -> None:
        """End a running turn `disposed`, drop queued sends, flush, and refuse further input."""
        if self._closed:
            return
        self._closed = True
        if self._inbox or self._kept_steering:
            self._inbox.clear()
            for steering in self._kept_steering:
                self.session.emit(SteerDropped(text=steering.text))
            self._kept_steering = []
            self._queued_changed()
        self._stop_turn("disposed", keep_inbox=False)
        await self.when_idle()
        try:
            await self.session.flush()
        except Exception:
            log.exception("session %s: final flush failed", self.session.id)
        try:
            await self.gateway.aclose()
        finally:
            for cleanup in reversed(self._on_dispose):
                try:
                    await cleanup()
                except Exception:
                    log.exception("session %s: a dispose cleanup failed", self.session.id)

    def on_prompt(self, listener: PromptListener) -> Callable[[], None]:
        """Add a prompt-admission listener (a waterfall, in registration order)."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def on_tool_result(self, hook: ToolHook) -> Callable[[], None]:
        """Add a hook whose additional contexts join the outbox after the batch's results."""
        self._tool_hooks.append(hook)
        return lambda: self._tool_hooks.remove(hook) if hook in self._tool_hooks else None

    def register_area(self, area: ContextAreaImplementation) -> str:
        """Register a Context Area; returns its id in this session."""
        self._check_open()
        area_id = self.coop.register(area)
        if isinstance(area, SubtaskArea) and area.active:
            self._offer_subtask_done(area)
        return area_id

    def active_subtask(self) -> SubtaskArea | None:
        for area in self.coop.areas:
            if isinstance(area, SubtaskArea) and area.active:
                return area
        return None

    def pin(self, text: str) -> str:
        """Pin a note into the stable floor (karma); it is part of every request from next turn."""
        pin_id = self.assembler.next_pin_id()
        self.record(PinAdd(pin_id=pin_id, text=text))
        return pin_id

    def unpin(self, pin_id: str) -> bool:
        if pin_id not in dict(self.assembler.pins.pins):
            return False
        self.record(PinRemove(pin_id=pin_id))
        return True

    @property
    def pins(self) -> tuple[str, ...]:
        return tuple(pin_id for pin_id, _ in self.assembler.pins.pins)

    def model_names(self) -> list[str]:
        return list(self.assembler.config.models)

    def request_model(self, name: str) -> str:
        """Bind the session to another model entry; it takes effect at the next turn start."""
        self._check_open()
        self.assembler.config.model(name)  # raises ConfigError naming the configured entries
        if self._gateway_factory is None:
            raise RuntimeError("this agent was built without a gateway factory")
        self.record(self.assembler.grants.bind(name))
        return "from the next turn"

    async def compact(self, keep_groups: int = DEFAULT_KEEP_GROUPS) -> CompactionResult | None:
        """Summarize the oldest history groups (between turns only); None if nothing to compact."""
        self._check_open()
        return await compact(self, keep_groups=keep_groups)

    async def fork(self) -> str:
        """Copy this session up to here into a new stored session; returns its id."""
        if self._turn is not None:
            raise RuntimeError("cannot fork while a turn is running")
        if self._fork is None:
            raise RuntimeError("this session is not stored, so it cannot be forked")
        await self.session.flush()
        return await self._fork(len(self.session.events))

    # --- the runner ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise AgentClosedError(f"the agent for session {self.session.id} is disposed")

    def _stop_turn(self, reason: TurnEndReason, keep_inbox: bool) -> None:
        turn = self._turn
        if turn is None and self._preparing:
            # the submission is still being admitted or its turn opened: the turn it opens ends
            # at once with this reason (the user's words are kept, the model is not called)
            self._keep_inbox = keep_inbox
            self._cancel_before_start = reason
            return
        if turn is None or turn.closing:
            return
        self._keep_inbox = keep_inbox
        self.permission.cancel_pending()
        turn.stop(reason)

    async def _run_inbox(self) -> None:
        self._set_status("running")
        try:
            while self._inbox:
                submission = self._inbox.popleft()
                self._queued_changed()
                await self._process(submission)
        finally:
            self._runner = None
            self._set_status("idle")

    async def _process(self, submission: PromptSubmission) -> None:
        self._preparing = True
        self._cancel_before_start = None
        try:
            await self._admit_and_run(submission)
        finally:
            self._preparing = False
            self._cancel_before_start = None

    async def _admit_and_run(self, submission: PromptSubmission) -> None:
        # spec: admission runs before any turn exists; a blocked prompt appends nothing
        try:
            decision = await run_admission(self._listeners, submission)
        except Exception as exc:
            log.exception("prompt listener failed")
            self.session.emit(AgentError(turn=None, message=f"A prompt listener failed: {exc}"))
            return
        if isinstance(decision, Block):
            self.session.emit(AgentError(turn=None, message=f"Prompt blocked: {decision.reason}"))
            return
        if self._closed:
            return  # disposed while admitting: like a queued send, it is dropped
        try:
            await self._open_turn(submission)
        except Exception as exc:
            # Nothing turn-level was appended: the runner goes on with the next send rather than
            # dying with the inbox (and `when_idle`/`dispose` raising).
            self.assembler.end_turn()
            log.exception("session %s: the turn could not start", self.session.id)
            self.session.emit(AgentError(turn=None, message=f"The turn could not start: {exc}"))
            return
        await self._run_turn(submission, decision)

    async def _open_turn(self, submission: PromptSubmission) -> None:
        """Everything before `turn/start` that can fail: title, model binding, the floor."""
        self._title(submission.content)
        await self._bind_for_turn()
        for block in await self.assembler.begin_turn(self.tools.names, self.model_id):
            self.session.append(block)

    async def _run_turn(self, submission: PromptSubmission, decision: Allow) -> None:
        number = self.session.state.last_turn + 1
        # The Turn exists before turn/start is logged, so a subscriber reacting to turn/start
        # can already cancel it or stage into it.
        turn = Turn(self, number)
        self._turn = turn
        self._preparing = False
        if self._closed:
            turn.stop("disposed")  # disposed while the turn was being opened
        elif self._cancel_before_start is not None:
            turn.stop(self._cancel_before_start)  # cancelled while admitting: keeps _keep_inbox
        else:
            self._keep_inbox = False
        self.session.append(TurnStart(turn=number))
        original = submission.content if decision.content != submission.content else None
        self.append_user(
            decision.content,
            Source("user"),
            original_content=original,
            attachments=submission.attachments,
        )
        for context in decision.additional_contexts:
            self.append_user(context.content, context.source)
        if self._kept_steering:
            for steering in self._kept_steering:
                self.outbox.stage(steering)
            self._kept_steering = []
            self._queued_changed()
        task = asyncio.create_task(turn.run(), name=f"{self.session.id}-turn-{number}")
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            # The runner itself was cancelled (loop shutdown): end the turn, then stop.
            turn.stop("disposed")
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            self._turn = None
            self.assembler.end_turn()
            try:
                await self.session.flush()  # checkpoint: turn end
            except Exception as exc:
                log.exception("session %s: flush at turn end failed", self.session.id)
                self.session.emit(
                    AgentError(turn=number, message=f"Saving the session failed: {exc}")
                )

    def _title(self, prompt: str) -> None:
        """spec: the title is the first line of the first prompt, trimmed."""
        if self._titled is None:  # the log is scanned once; afterwards only our own title counts
            self._titled = any(isinstance(e.data, SessionTitle) for e in self.session.events)
        if self._titled:
            return
        line = next((ln.strip() for ln in prompt.splitlines() if ln.strip()), "")
        if line:
            self.session.append(SessionTitle(title=line))
            self._titled = True

    async def _bind_for_turn(self) -> None:
        """Apply a model binding made since the last turn: new gateway, Context rebound."""
        grants = self.assembler.grants
        # A binding made while idle is active at once (nothing is staged), so compare the grant
        # the turn will run with to the entry the gateway was made for.
        upcoming = grants.staged or grants.active
        if (
            upcoming is None
            or self._gateway_factory is None
            or upcoming.model == self._gateway_model
        ):
            return
        gateway, model_id = self._gateway_factory(upcoming.model)
        old = self.gateway
        self.gateway, self.model_id = gateway, model_id
        self._gateway_model = upcoming.model
        if gateway.gateway_type != self.context.gateway_type:
            rebuilt = rebuild_context(gateway.gateway_type, self.session.events)
            self.context.rebind(gateway.gateway_type, rebuilt.context.entries())
            self.assembler.orchestrator.note_detached(0)
        await old.aclose()

    async def _idle_flush(self) -> None:
        # spec: a failed idle flush is logged, never a turn error; the next flush retries it
        try:
            await self.session.flush()
        except Exception:
            log.exception(
                "session %s: idle flush failed; the next flush retries it", self.session.id
            )

    def _set_status(self, status: AgentStatus) -> None:
        if status != self._status:
            self._status = status
            self.session.emit(AgentStatusChanged(status=status))

    def _queued_changed(self) -> None:
        self.session.emit(
            AgentQueued(
                messages=tuple(s.content for s in self._inbox),
                steering=tuple(s.text for s in self._kept_steering),
            )
        )

    def _outbox_changed(self) -> None:
        self.session.emit(
            OutboxChanged(
                contexts=tuple(
                    MessageData(role=Role.user, content=c.content, source=c.source)
                    for c in self.outbox.contexts
                ),
                steering=tuple(s.text for s in self.outbox.steering),
            )
        )

    def _sink(self, payload: Payload) -> Event:
        """CoopContext's events go to the log; a collection re-indexes the orchestrator."""
        event = self.record(payload)
        if isinstance(payload, GcCollect):
            self.assembler.orchestrator.note_detached(payload.earliest)
        return event

    def record(self, payload: Payload) -> Event:
        """Append a session-level event and keep the assembler (grants, pins, floor log) in step."""
        event = self.session.append(payload)
        self.assembler.follow(payload)
        return event

    def _offer_subtask_done(self, area: SubtaskArea) -> None:
        """While a subtask is active the model also has `subtask_done(result)`."""
        if SubtaskDoneTool.name in self.tools:
            self.tools.unregister(SubtaskDoneTool.name)

        def done() -> None:
            self.tools.unregister(SubtaskDoneTool.name)

        self.tools.register(SubtaskDoneTool(area, done))

    # --- used by Turn ----------------------------------------------------------------------------

    def drain_outbox(self) -> bool:
        """Append every staged item as its own user/message, FIFO; True if steering arrived."""
        steered = False
        for item in self.outbox.drain():
            if isinstance(item, Steering):
                steered = True
                self.append_user(item.text, Source("user"))
            else:
                self.append_user(item.content, item.source)
        return steered

    def settle_outbox(self, reason: TurnEndReason) -> None:
        """After turn/end: staged contexts become out-of-turn messages; steering is kept for the
        next turn (`cancel(keep_inbox=True)`) or dropped and reported with its text."""
        for context in self.outbox.take_contexts():
            self.append_user(context.content, context.source)
        kept = False
        for steering in self.outbox.take_steering():
            if self._keep_inbox and reason == "cancelled":
                self._kept_steering.append(steering)
                kept = True
            else:
                self.session.emit(SteerDropped(text=steering.text))
        if kept:
            self._queued_changed()

    def render_areas(self, turn: int) -> None:
        self.coop.render(turn=turn)

    def assemble(self, turn: int) -> AssembledContext:
        retained = frozenset(
            self.coop.area_id(area)
            for area in self.coop.areas
            if area.life_state is AreaLifeState.retain
        )
        return self.assembler.assemble(self.context, turn=turn, retained_owners=retained)

    def emplace(self, event: Event) -> None:
        """Put a logged message into the Context, as a rebuild of the log would."""
        tool_name = ""
        if isinstance(event.data, ToolResultRecord):
            tool_name = self._tool_names.get(event.data.call_id, "")
        emplace_event(self.context, event, turn=self.session.state.open_turn, tool_name=tool_name)

    def note_tool_call(self, call: ToolCall) -> None:
        self._tool_names[call.id] = call.name

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        return tuple(self.tools.specs())

    def tool_context(self, call_id: str) -> ToolContext:
        return ToolContext(
            root=self.workspace,
            call_id=call_id,
            max_output=self.options.max_tool_output,
            timeout=self.options.tool_timeout,
            secret_patterns=self.assembler.secret_patterns,
            shell_class=self.assembler.shell_class,
        )

    def run_tool_hooks(self, call: ToolCall, output: ToolOutput) -> list[AdditionalContext]:
        contexts: list[AdditionalContext] = []
        for hook in self._tool_hooks:
            try:
                contexts.extend(hook(call, output))
            except Exception as exc:
                log.exception("tool hook %r failed", hook)
                self.session.emit(
                    AgentError(
                        turn=self.session.state.open_turn, message=f"A tool hook failed: {exc}"
                    )
                )
        return contexts

    def append_user(
        self,
        content: str,
        source: Source,
        *,
        original_content: str | None = None,
        attachments: tuple[Attachment, ...] = (),
    ) -> Event:
        """Append one sourced user/message and emplace it: direct input or injected context."""
        label = (
            USER_LABEL
            if source.is_user
            else PrivatizationLabel(cls=PrivacyClass.internal, parents=frozenset({str(source)}))
        )
        event = self.session.append(
            UserMessage(
                content=content,
                source=source,
                original_content=original_content,
                attachments=attachments,
                label=label,
            )
        )
        self.emplace(event)
        return event
