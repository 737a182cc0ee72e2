"""The session's working state and the operations a turn needs, behind the public `Agent`.

`Turn` and the compactor take a `Runtime`; front ends never see it. It owns the log, the Context and
its Areas, the outbox, the assembler, the tools and the gateway, and keeps them in step: every logged
message is emplaced into the Context, every session-level record updates the assembler.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from engine.agent.assembler import Assembler
from engine.agent.checkpointing import Checkpointing, StoreOpener
from engine.agent.options import AgentOptions
from engine.agent.outbox import Outbox, Steering
from engine.agent.subtask import SubtaskDoneTool
from engine.agent.tool_definitions import tool_definition
from engine.context import Context, CoopContext, emplace_event
from engine.context.area import AreaLifeState, RestorableArea
from engine.context.areas import BUILTIN_KINDS, SubtaskArea
from engine.context.orchestrator import AssembledContext
from engine.context.prefix import PrefixMeter
from engine.counts import counted
from engine.events import (
    AgentError,
    AgentQueued,
    AgentState,
    AgentStatus,
    Attachment,
    Event,
    GcCollect,
    MessageData,
    OutboxChanged,
    Payload,
    PrefixBreak,
    SteerDropped,
    StepStart,
    ToolDefinition,
    ToolResultRecord,
    TurnEndReason,
    UserMessage,
)
from engine.gateway.base import Gateway, GatewayType, ToolSpec
from engine.gateway.wire import wire_text
from engine.message import AdditionalContext, Role, Source, ToolCall
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.redaction import Redactor
from engine.rewind_intervals import RewoundIntervals
from engine.session import Session
from engine.tools import ToolContext, ToolOutput, ToolRegistry
from engine.tools.front_end import LOCAL, FrontEndAccess, FrontEndLender
from engine.tools.permission import PermissionBroker

if TYPE_CHECKING:  # replaying and resuming are imported by the sessions that reopen a log
    from engine.agent.followers import Followers
    from engine.context import ContextRebuilder, RebuiltContext, UnrestorableArea

log = logging.getLogger(__name__)

ToolHook = Callable[[ToolCall, ToolOutput], Iterable[AdditionalContext]]
GatewayFactory = Callable[[str], tuple[Gateway, str]]
"""Makes the gateway (and the provider's model id) for a configured model entry name."""

USER_LABEL = PrivatizationLabel(cls=PrivacyClass.internal)
INJECTED_DEFAULT_LABEL = PrivatizationLabel(cls=PrivacyClass.internal)
"""The label of injected context whose producer declared none."""


def _tools_change(before: tuple[ToolDefinition, ...], after: tuple[ToolDefinition, ...]) -> str:
    """Which tools a request offers that the one before did not, and which it no longer offers."""
    old, new = {d.name for d in before}, {d.name for d in after}
    parts = []
    if added := sorted(new - old):
        parts.append("added: " + ", ".join(added))
    if removed := sorted(old - new):
        parts.append("removed: " + ", ".join(removed))
    return "; ".join(parts) or "definitions changed"


def _nothing_lent() -> FrontEndAccess:
    return LOCAL


async def rebuild_from_log(
    session: Session, gateway_type: GatewayType, rewound: RewoundIntervals
) -> ContextRebuilder:
    """A rebuilder fed the session's whole log in `gateway_type`'s format, read by range (a
    stored session does not hold all of it), without what `rewound` took out of its history."""
    from engine.context import ContextRebuilder

    rebuilder = ContextRebuilder(gateway_type)
    async for chunk in session.chunks():
        rebuilder.feed(chunk, rewound)
    return rebuilder


class Runtime:
    """One session's engine state; the Agent's turns and its compactor work through it."""

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
        options: AgentOptions,
        rebuilt: RebuiltContext | None = None,
        area_kinds: Mapping[str, type[RestorableArea]] = BUILTIN_KINDS,
        gateway_factory: GatewayFactory | None = None,
        redact: Redactor | None = None,
        front_end: FrontEndLender | None = None,
        checkpoints: StoreOpener | None = None,
        rewound: RewoundIntervals | None = None,
    ) -> None:
        self.session = session
        self.rewound = rewound if rewound is not None else RewoundIntervals()
        """What the session's rewinds took out of its history (kept up to date by `rewind`)."""
        self.area_kinds = area_kinds
        self.redact = redact if redact is not None else Redactor()
        """Every secret the session holds; what a turn ends with or reports passes through it."""
        self.gateway = gateway
        self.model_id = model_id
        self.workspace = workspace
        self.tools = tools
        self.permission = permission
        self.assembler = assembler
        self.options = options
        self.gateway_factory = gateway_factory
        self.front_end = front_end if front_end is not None else _nothing_lent
        """What the front end serving the turn lends a tool call (files, terminal)."""
        self._gateway_model = assembler.binding.name  # the model entry `gateway` was made for
        self.unrestored_areas: tuple[UnrestorableArea, ...] = ()
        self.checkpointing = Checkpointing(session, checkpoints, assembler.secret_patterns)
        """The workspace's checkpoints, taken around the calls that may change it."""
        if rebuilt is None:
            self.coop = CoopContext(Context(gateway.gateway_type), sink=self._sink)
        else:
            self._resume_areas(rebuilt)
        self.outbox = Outbox(self._outbox_changed)
        self.tool_hooks: list[ToolHook] = []
        self._kept_steering: list[Steering] = []  # steering a cancel kept for the next turn
        self._keep_steering = False  # the turn's cancel keeps its staged steering
        self._queued: tuple[str, ...] = ()  # the sends waiting in the Agent's inbox, as it said
        self.last_assembly: AssembledContext | None = None
        self.last_assembly_length = 0  # how many items the Context held at that assembly
        self.last_tools: tuple[ToolDefinition, ...] = ()  # the tools that request offered
        self.prefix = PrefixMeter()  # the last request's wire text, for `step/start`'s prefix
        self.status: AgentState = "idle"
        self._waiting = 0  # tool calls waiting for a permission answer
        # The names of the calls made since the session was opened: a result follows its call
        # in the same step, and resume closes any open turn, so no earlier call gets a result.
        self._tool_names: dict[str, str] = {}
        for area in self.coop.areas:
            if isinstance(area, SubtaskArea) and area.active:
                self.offer_subtask_done(area)

    @property
    def context(self) -> Context:
        return self.coop.context

    def _resume_areas(self, rebuilt: RebuiltContext) -> None:
        from engine.context import resume_coop_context

        resumed = resume_coop_context(rebuilt, self.area_kinds, sink=self._sink)
        self.coop, self.unrestored_areas = resumed.coop, resumed.unrestored

    def adopt(self, followers: Followers) -> None:
        """Take the state `followers` rebuilt from the log (a rewind): the grants, pins, mode
        and Context with its Areas, restored as a resume restores them. Between turns only."""
        followers.assembler.inherit_breaks(self.assembler)
        self.assembler = followers.assembler
        self.permission = followers.permission
        self._resume_areas(followers.rebuilder.snapshot())
        self._tool_names.clear()
        if SubtaskDoneTool.name in self.tools:
            self.tools.unregister(SubtaskDoneTool.name)
        for area in self.coop.areas:
            if isinstance(area, SubtaskArea) and area.active:
                self.offer_subtask_done(area)

    # --- the log -------------------------------------------------------------------------------

    def record(self, payload: Payload) -> Event:
        """Append a session-level event and keep the assembler (grants, pins, floor log) in step."""
        event = self.session.append(payload)
        self.assembler.follow(payload)
        return event

    def _sink(self, payload: Payload) -> Event:
        """CoopContext's events go to the log; a collection re-indexes the orchestrator."""
        event = self.record(payload)
        if isinstance(payload, GcCollect):
            self.assembler.note_detached(payload.earliest)
            if self._rewrites_history(payload.earliest):
                self.assembler.note_break("collection", ", ".join(payload.areas) + " collected")
        return event

    def _rewrites_history(self, earliest: int) -> bool:
        """A detach from `earliest` changes the last request before its current turn (what it
        sent as history or reserved), not only the tail it ended with."""
        last = self.last_assembly
        if last is None:
            return False
        turn_start = min(last.current_indices, default=self.last_assembly_length)
        return earliest < turn_start

    def append_user(
        self,
        content: str,
        source: Source,
        *,
        original_content: str | None = None,
        attachments: tuple[Attachment, ...] = (),
        label: PrivatizationLabel | None = None,
    ) -> Event:
        """Append one sourced user/message and emplace it: direct input or injected context."""
        if label is None:
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

    def append_context(self, context: AdditionalContext) -> Event:
        """Append injected context, labelled as its producer declared (internal by default) with
        its source as a parent."""
        declared = context.label or INJECTED_DEFAULT_LABEL
        parent = PrivatizationLabel.of(PrivacyClass.public, str(context.source))
        return self.append_user(context.content, context.source, label=declared.join(parent))

    def emplace(self, event: Event) -> None:
        """Put a logged message into the Context, as a rebuild of the log would."""
        tool_name = ""
        if isinstance(event.data, ToolResultRecord):
            tool_name = self._tool_names.get(event.data.call_id, "")
        emplace_event(self.context, event, turn=self.session.state.open_turn, tool_name=tool_name)

    def note_tool_call(self, call: ToolCall) -> None:
        self._tool_names[call.id] = call.name

    async def idle_flush(self) -> None:
        # spec: a failed idle flush is logged, never a turn error; the next flush retries it
        try:
            await self.session.flush()
        except Exception:
            log.exception(
                "session %s: idle flush failed; the next flush retries it", self.session.id
            )

    # --- the outbox ----------------------------------------------------------------------------

    def drain_outbox(self) -> bool:
        """Append every staged item as its own user/message, FIFO; True if steering arrived."""
        steered = False
        for item in self.outbox.drain():
            if isinstance(item, Steering):
                steered = True
                self.append_user(item.text, Source("user"))
            else:
                self.append_context(item)
        return steered

    def settle_outbox(self, reason: TurnEndReason) -> None:
        """After turn/end: staged contexts become out-of-turn messages; steering is kept for the
        next turn (`cancel(keep_inbox=True)`) or dropped and reported with its text."""
        for context in self.outbox.take_contexts():
            self.append_context(context)
        kept = False
        for steering in self.outbox.take_steering():
            if self._keep_steering and reason == "cancelled":
                self._kept_steering.append(steering)
                kept = True
            else:
                self.session.emit(SteerDropped(text=steering.text))
        if kept:
            self._report_queue()

    def keep_steering(self, keep: bool) -> None:
        """Whether the turn's cancel keeps its staged steering for the next turn (set by the
        Agent when it stops a turn, cleared when the next one starts)."""
        self._keep_steering = keep

    def inbox_changed(self, messages: tuple[str, ...]) -> None:
        """The sends waiting in the Agent's inbox changed to `messages`: reported with the kept
        steering (`agent/queued`)."""
        self._queued = messages
        self._report_queue()

    def restage_kept_steering(self) -> None:
        """A turn starts: the steering a cancel kept goes into its outbox."""
        if self._kept_steering:
            for steering in self._kept_steering:
                self.outbox.stage(steering)
            self._kept_steering = []
            self._report_queue()

    def take_kept_steering(self) -> list[Steering]:
        """The steering a cancel kept, taken away (a rewind clears it), the change reported."""
        kept, self._kept_steering = self._kept_steering, []
        if kept:
            self._report_queue()
        return kept

    def drop_queue(self) -> None:
        """The Agent is disposed with its inbox emptied: the kept steering is dropped, each
        reported with its text, and the empty queue reported once."""
        if not (self._queued or self._kept_steering):
            return
        for steering in self._kept_steering:
            self.session.emit(SteerDropped(text=steering.text))
        self._kept_steering, self._queued = [], ()
        self._report_queue()

    def _report_queue(self) -> None:
        self.session.emit(
            AgentQueued(messages=self._queued, steering=tuple(s.text for s in self._kept_steering))
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

    def report_error(self, turn: int | None, message: str) -> str:
        """Send `agent/error` with `message` redacted (an exception's text may quote a secret);
        returns the message as sent."""
        message = self.redact(message)
        self.session.emit(AgentError(turn=turn, message=message))
        return message

    # --- status --------------------------------------------------------------------------------

    def set_status(self, status: AgentState) -> None:
        if status != self.status:
            self.status = status
            self.session.emit(AgentStatus(status=status))

    def waiting_for_permission(self, waiting: bool) -> None:
        """`waiting` while any tool call waits for an answer, `running` again after the last."""
        self._waiting += 1 if waiting else -1
        if self.status != "idle":
            self.set_status("waiting" if self._waiting > 0 else "running")

    # --- a step --------------------------------------------------------------------------------

    def render_areas(self, turn: int) -> None:
        self.coop.render(turn=turn)

    def assemble(self, turn: int) -> AssembledContext:
        retained = frozenset(
            self.coop.area_id(area)
            for area in self.coop.areas
            if area.life_state is AreaLifeState.retain
        )
        assembler = self.assembler
        assembled = assembler.assemble(self.context, turn=turn, retained_owners=retained)
        if assembled.evicted or assembled.released:
            dropped = [counted(assembled.evicted, "oldest turn")] if assembled.evicted else []
            if assembled.released:
                dropped.append(counted(assembled.released, "superseded render"))
            assembler.note_break("eviction", " and ".join(dropped) + " dropped")
            if assembler.pins_waiting:  # the prefix breaks after the floor anyway: pins join it
                for block in assembler.rebase_pins():
                    self.session.append(block)
                assembled = assembler.assemble(self.context, turn=turn, retained_owners=retained)
        self.last_assembly, self.last_assembly_length = assembled, len(self.context)
        return assembled

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        return tuple(self.tools.specs())

    def offer_tools(self, specs: tuple[ToolSpec, ...]) -> tuple[str, ...]:
        """The hashes of `specs`' definitions, for the step's `step/start`; the definitions not
        in the log yet are appended (`tool/define`), and kept as the last request's."""
        definitions = tuple(map(tool_definition, specs))
        for fresh in self.assembler.tool_log.new(definitions):
            self.session.append(fresh)
        if self.last_tools and definitions != self.last_tools:
            self.assembler.note_break("tools", _tools_change(self.last_tools, definitions))
        self.last_tools = definitions
        return tuple(definition.hash for definition in definitions)

    def log_step_start(self, breaks: list[PrefixBreak], start: StepStart) -> None:
        """Append the planned breaks and the `step/start` they explain, and tally their prefix
        figures as a reader of the log would."""
        tally = self.assembler.prefix_tally
        for payload in (*breaks, start):
            self.session.append(payload)
            tally.apply(payload)

    def measure_prefix(self, assembled: AssembledContext) -> tuple[int, int]:
        """The request's leading characters shared with the last one's, and its length, in the
        bound provider's wire order (`engine.gateway.wire`), with the tools `offer_tools` kept."""
        text = wire_text(
            self.gateway.gateway_type,
            self.gateway.codec,
            system=assembled.system,
            tools=[definition.text for definition in self.last_tools],
            items=assembled.items,
        )
        return self.prefix.measure(text), len(text)

    def tool_context(
        self, call_id: str, batch_size: int, on_output: Callable[[str], None] | None = None
    ) -> ToolContext:
        return ToolContext(
            root=self.workspace,
            call_id=call_id,
            max_output=self.assembler.budget().tool_output_limit(
                self.options.max_tool_output, batch_size
            ),
            timeout=self.options.tool_timeout,
            secret_patterns=self.assembler.secret_patterns,
            shell_class=self.assembler.shell_class,
            on_output=on_output,
            protected_paths=self.options.protected_paths,
            allowed_protected=self.options.allowed_protected,
            front_end=self.front_end(),
        )

    def run_tool_hooks(self, call: ToolCall, output: ToolOutput) -> list[AdditionalContext]:
        contexts: list[AdditionalContext] = []
        for hook in self.tool_hooks:
            try:
                contexts.extend(hook(call, output))
            except Exception as exc:
                log.exception("tool hook %r failed", hook)
                self.report_error(self.session.state.open_turn, f"A tool hook failed: {exc}")
        return contexts

    def offer_subtask_done(self, area: SubtaskArea) -> None:
        """While a subtask is active the model also has `subtask_done(result)`."""
        if SubtaskDoneTool.name in self.tools:
            self.tools.unregister(SubtaskDoneTool.name)

        def done() -> None:
            self.tools.unregister(SubtaskDoneTool.name)

        self.tools.register(SubtaskDoneTool(area, done), transient=True)

    # --- the model binding -----------------------------------------------------------------------

    async def bind_for_turn(self) -> None:
        """Apply a model binding made since the last turn: new gateway, Context rebound. Every
        request goes through it first (a turn's, `/compact`'s), so a request never goes to the
        gateway of an entry the session is no longer bound to."""
        # A binding made while idle is active at once (nothing is staged), so compare the grant
        # the turn will run with to the entry the gateway was made for.
        upcoming = self.assembler.upcoming
        if (
            upcoming is None
            or self.gateway_factory is None
            or upcoming.model == self._gateway_model
        ):
            return
        gateway, model_id = self.gateway_factory(upcoming.model)
        old = self.gateway
        self.gateway, self.model_id = gateway, model_id
        self._gateway_model = upcoming.model
        if gateway.gateway_type != self.context.gateway_type:
            rebuilt = await rebuild_from_log(self.session, gateway.gateway_type, self.rewound)
            self.context.rebind(gateway.gateway_type, rebuilt.context.entries())
            self.assembler.note_detached(0)
        await old.aclose()

    @property
    def max_retries(self) -> int:
        """How often a request to the gateway is retried: the options' figure when given, else
        the `max_retries` of the model entry the gateway was made for."""
        if self.options.max_retries is not None:
            return self.options.max_retries
        _, entry = self.assembler.config.model(self._gateway_model)
        return entry.max_retries

    async def close_gateway(self) -> None:
        await self.gateway.aclose()

    def flush_soon(self, tasks: set[asyncio.Task[None]]) -> None:
        """Start an idle flush, tracked in `tasks` until it settles."""
        flush = asyncio.create_task(self.idle_flush())
        tasks.add(flush)
        flush.add_done_callback(tasks.discard)
