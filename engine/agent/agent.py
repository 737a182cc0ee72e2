"""The Agent: one session's model loop behind `send`, `steer`, `inject` and `cancel`.

Front ends use this API, its read-only views and the session's event stream; nothing here knows a
front end. Turns run one at a time from a FIFO inbox; `inject` never starts one (spec:
context-injection). The working state lives in a `Runtime` that turns and the compactor share.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from engine.agent.admission import Allow, PromptListener, PromptSubmission, Reject, run_admission
from engine.agent.options import DEFAULT_KEEP_GROUPS
from engine.agent.outbox import Steering
from engine.agent.runtime import Runtime, ToolHook
from engine.agent.send import Blocked, Dropped, SendHandle, TurnOutcome
from engine.agent.turn import Turn
from engine.context import Context
from engine.context.area import ContextAreaImplementation
from engine.context.areas import SubtaskArea
from engine.context.floor import pin_note, unpin_note
from engine.errors import TrellisError
from engine.events import (
    AgentState,
    AssistantMessage,
    Attachment,
    CommandRun,
    Event,
    LiveEvent,
    PermissionModeSet,
    PinAdd,
    PinRemove,
    SessionTitle,
    StepEnd,
    StepStart,
    TurnEndReason,
    TurnStart,
)
from engine.held_log import HeldLog
from engine.message import AdditionalContext, Source
from engine.permission_mode import PermissionMode
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.session import READ_CHUNK, STREAM_QUEUE_SIZE, Immediate, Subscriber

if TYPE_CHECKING:  # the views and /compact are imported by the front ends that ask for them
    from engine.agent.code_rewind import CodePlan
    from engine.agent.compactor import CompactionResult
    from engine.agent.rewind import RewindPoint, RewindResult, RewoundTurn
    from engine.agent.views import AreaView, AssemblyView, ModelView, OutboxView, PinView
    from engine.config import DetectedModel
    from engine.context import UnrestorableArea
    from engine.context.budget import Budget
    from engine.context.usage import ContextUsage
    from engine.model_catalog import ModelChoice

__all__ = ["Agent", "AgentClosedError", "ModelChange", "ToolHook"]

RATE_LOOKBACK_STEPS = 64
"""How many steps `Agent.last_request` reads back for one that reported its tokens, whose rate
estimates the steps after it; a model that never reports is estimated at the default rate."""

log = logging.getLogger(__name__)

TITLE_MAX_CHARS = 120
"""A session title is one line of the first prompt, cut to this length."""

REWRITTEN_LABEL = PrivatizationLabel(cls=PrivacyClass.restricted)
"""What a listener rewrote away (`original_content`) may be what it meant to hide."""
COMMAND_LABEL = PrivatizationLabel(cls=PrivacyClass.internal)
"""A slash command holds the user's own words (`/pin TEXT`), internal as direct input is."""


class AgentClosedError(TrellisError, RuntimeError):
    """The agent was disposed; it takes no more input."""


@dataclass(frozen=True, slots=True)
class ModelChange:
    """What `request_model` did: the entry bound, its grant epoch, and when it takes effect."""

    model: str
    grant_epoch: int
    effective: str  # "next_turn" while a turn runs, else "now" (the next turn starts with it)


@dataclass(slots=True)
class _Queued:
    """A prompt waiting for the running turn to end, with the handle its sender holds."""

    submission: PromptSubmission
    handle: SendHandle


class Agent:
    """One session's agent. Build it with `engine.agent.open_agent`."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        fork: Callable[[int], Awaitable[str]] | None = None,
        on_dispose: Sequence[Callable[[], Awaitable[None]]] = (),
    ) -> None:
        self._rt = runtime
        self._fork = fork
        self._on_dispose = tuple(on_dispose)
        self._listeners: list[PromptListener] = []
        self._inbox: deque[_Queued] = deque()
        # The send at the head of the inbox is about to run (its runner is scheduled), is being
        # admitted, or its turn is opening: a cancel now ends the turn it opens at once.
        self._preparing = False
        self._cancel_before_start: TurnEndReason | None = None
        self._runner: asyncio.Task[None] | None = None
        self._turn: Turn | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        self._closed = False
        self._rewriting: str | None = None
        """A compaction or a rewind under way: each rebuilds the history, so one at a time."""

    # --- identity and state ----------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self._rt.session.id

    @property
    def log(self) -> HeldLog:
        """The durable events by seq (read-only; `len` is the next seq). Only those held in
        memory, from `log_start` on, can be read here: the whole log of a session without a
        store; a stored session holds what it appended since it was opened, and of a long one
        only the newest few thousand events. Reading an earlier one raises `NotHeldError`;
        `read_log` reads any range."""
        session = self._rt.session
        return HeldLog(session.held, session.held_from)

    @property
    def log_start(self) -> int:
        """The seq of the first event `log` holds (0 unless the session was resumed or is long)."""
        return self._rt.session.held_from

    async def read_log(self, start: int = 0, end: int | None = None) -> Sequence[Event]:
        """The durable events with `start <= seq < end` (`None`: to the end of the log); those
        `log` does not hold are read from the store by range."""
        session = self._rt.session
        return await session.read(start, session.next_seq if end is None else end)

    @property
    def stored(self) -> bool:
        """Whether the session is in the store: a new one enters it with its first
        `user/message` (a prompt or an injected context), so until then it may vanish."""
        return self._rt.session.stored

    @property
    def unflushed(self) -> int:
        """Events appended but not yet acknowledged by the store."""
        return self._rt.session.pending

    @property
    def context(self) -> Context:
        """The provider-native working Context; read it, never change it."""
        return self._rt.context

    @property
    def status(self) -> AgentState:
        return self._rt.status

    @property
    def turn_open(self) -> bool:
        """A turn runs and takes input (false again from its `turn/end` on)."""
        return self._turn is not None and not self._turn.ended

    @property
    def workspace(self) -> str:
        return str(self._rt.workspace)

    @property
    def unrestored_areas(self) -> tuple[UnrestorableArea, ...]:
        """Areas a resume could not rebuild (retired from the resume on), with the reason."""
        return self._rt.unrestored_areas

    # --- read-only views -------------------------------------------------------------------------

    @property
    def areas(self) -> tuple[AreaView, ...]:
        from engine.agent.views import area_views

        return area_views(self._rt.coop)

    @property
    def last_assembly(self) -> AssemblyView | None:
        """The last request assembled in this process (None before the first step)."""
        from engine.agent.views import assembly_view, dropped_views, tool_views

        assembled = self._rt.last_assembly
        if assembled is None:
            return None
        return assembly_view(
            assembled,
            turn=self._turn.number if self._turn is not None else None,
            egress=self._rt.assembler.egress,
            dropped=dropped_views(
                self._rt.context, assembled.indices, self._rt.last_assembly_length
            ),
            tools=tool_views(self._rt.last_tools),
            prefix=self._rt.assembler.last_prefix,
        )

    @property
    def outbox(self) -> OutboxView:
        from engine.agent.views import OutboxView

        outbox = self._rt.outbox
        return OutboxView(
            contexts=tuple((c.content, c.source) for c in outbox.contexts),
            steering=tuple(s.text for s in outbox.steering),
        )

    @property
    def pins(self) -> tuple[PinView, ...]:
        from engine.agent.views import pin_views

        return pin_views(self._rt.assembler.pinned)

    @property
    def model(self) -> ModelView:
        from engine.agent.views import model_view

        binding = self._rt.assembler.binding
        upcoming = self._rt.assembler.upcoming
        return model_view(
            binding.name,
            binding.epoch,
            binding.entry,
            model_id=self._rt.model_id,
            next_name=upcoming.model if upcoming is not None else binding.name,
        )

    @property
    def budget(self) -> Budget:
        """The governors of the next request to the bound entry: its window, the effective
        character cap (`cap`) and where that comes from (`cap_source`)."""
        return self._rt.assembler.budget()

    async def last_request(self) -> tuple[StepStart, ContextUsage] | None:
        """The last request's `step/start` and its tokens (reported, else estimated at the rate
        of the latest step that reported some), read from the log, a resumed session's too; None
        before the first request."""
        from engine.context.usage import UsageTally, reported

        end = self._rt.session.next_seq
        found: list[Event] = []  # the steps' events read so far, newest first
        last: StepStart | None = None
        steps = 0
        ended_reported = False  # the step whose start comes next (reading backwards) reported
        done = False
        while end > 0 and not done:
            start = max(0, end - READ_CHUNK)
            chunk = await self.read_log(start, end)
            end = start
            for event in reversed(chunk):
                data = event.data
                kind = type(data)  # by exact class (see `Payload`)
                if kind is StepEnd:
                    ended_reported = reported(cast(StepEnd, data).usage)
                elif kind is StepStart:
                    last = last or cast(StepStart, data)
                    steps += 1
                    # a step that reported gives the rate the later ones are estimated at
                    done = ended_reported or steps > RATE_LOOKBACK_STEPS
                    ended_reported = False
                elif kind is not AssistantMessage:
                    continue
                found.append(event)
                if done:
                    break
        if last is None:
            return None
        tally = UsageTally()
        for event in reversed(found):
            tally.take(event.data)
        usage = tally.current()
        assert usage is not None
        return last, usage

    def model_names(self) -> list[str]:
        return list(self._rt.assembler.config.models)

    def model_choices(self) -> tuple[ModelChoice, ...]:
        """Every entry this session may switch to, with where each comes from."""
        from engine.model_catalog import model_choices

        return model_choices(self._rt.assembler.config)

    def add_models(self, found: Mapping[str, DetectedModel]) -> None:
        """Entries found after opening (a local server's models): `request_model` may name them
        from now on. An entry of the same name this session knows stays as it is."""
        assembler = self._rt.assembler
        assembler.config = assembler.config.with_models(found)

    @property
    def mode(self) -> PermissionMode:
        """The session's permission mode (engine/permission_mode.py)."""
        return self._rt.permission.mode

    @property
    def secret_patterns(self) -> tuple[str, ...]:
        return self._rt.assembler.secret_patterns

    def active_subtask(self) -> SubtaskArea | None:
        for area in self._rt.coop.areas:
            if isinstance(area, SubtaskArea) and area.active:
                return area
        return None

    @property
    def cursor_holder(self) -> str | None:
        """The id of the Area holding the cursor exclusively (a subtask at work), else None:
        while one does, no other Area renders (spec: exclusive keeps the cursor)."""
        return self._rt.coop.holder

    def area(self, area_id: str) -> ContextAreaImplementation:
        """The registered Area with this id; raises KeyError naming it."""
        try:
            return self._rt.coop.area_by_id(area_id)
        except KeyError:
            raise KeyError(f"no Area {area_id!r} in this session") from None

    # --- the event stream ------------------------------------------------------------------------

    def subscribe(
        self, subscriber: Subscriber, *, from_seq: int | None = None
    ) -> Callable[[], None]:
        """Every durable and live event of this session, as it happens; returns the unsubscribe.

        With `from_seq` the stored events from that seq come first, inside this call, then live
        ones, with no gap and no duplicate; `from_seq` may not precede `log_start` (a resumed
        session's older events are read from the store: `subscribe_from`). The callback runs
        inside the append, on the event loop: it must not block.
        """
        return self._rt.session.subscribe(subscriber, from_seq=from_seq)

    async def subscribe_from(self, subscriber: Subscriber, from_seq: int) -> Callable[[], None]:
        """`subscribe` from any seq: the events `log` does not hold are read from the store and
        delivered first, then the stream goes on as `subscribe` delivers it."""
        return await self._rt.session.subscribe_from(subscriber, from_seq)

    def events(
        self, from_seq: int = 0, *, max_queue: int = STREAM_QUEUE_SIZE
    ) -> AsyncIterator[Event | LiveEvent]:
        """The same stream as an async iterator for bridges and the console.

        A consumer that falls `max_queue` events behind gets `stream/overflow {last_seq}` and then
        the durable events from there again: memory stays bounded, no durable event is lost.
        """
        return self._rt.session.stream(from_seq, max_queue=max_queue)

    def event_batches(
        self,
        from_seq: int = 0,
        *,
        max_queue: int = STREAM_QUEUE_SIZE,
        immediate: Immediate | None = None,
    ) -> AsyncIterator[Sequence[Event | LiveEvent]]:
        """`events` in batches: each time, everything that happened since the consumer last took,
        so a bridge that fell behind handles what waits in one go (one write for many updates).
        `immediate` is offered each event while the consumer waits with nothing queued
        (`Session.batches`)."""
        return self._rt.session.batches(from_seq, max_queue=max_queue, immediate=immediate)

    # --- input -----------------------------------------------------------------------------------

    def send(self, text: str, attachments: Sequence[Attachment] = ()) -> SendHandle:
        """Queue direct user input; each send is exactly one turn. Await the handle for the outcome."""
        self._check_open()
        if not isinstance(text, str):
            raise TypeError(f"send() takes str, not {type(text).__name__}")
        ahead = len(self._inbox) + (1 if self._runner is not None else 0)
        handle = SendHandle(ahead)
        self._inbox.append(
            _Queued(PromptSubmission(content=text, attachments=tuple(attachments)), handle)
        )
        self._inbox_changed()
        if self._runner is None and self._rewriting != "rewind":
            self._start_runner()
        return handle

    def _start_runner(self) -> None:
        # what runs first is the head of the inbox: a cancel before the runner's first step is
        # for it
        self._preparing = True
        self._runner = asyncio.create_task(self._run_inbox(), name=f"agent-{self.session_id}")

    def steer(self, text: str) -> SendHandle | None:
        """Deliver words into the running turn at its next safe boundary; when idle, a send
        (whose handle is returned)."""
        self._check_open()
        if not isinstance(text, str):
            raise TypeError(f"steer() takes str, not {type(text).__name__}")
        turn = self._turn
        if turn is not None and not turn.ended and not turn.ending:
            self._rt.outbox.stage(Steering(text))
            return None
        # from turn/end on (a subscriber of turn/end included) steering is a new send
        return self.send(text)

    def inject(self, context: AdditionalContext) -> None:
        """Add model-facing context: staged during a turn (or a rewind), appended and flushed
        when idle."""
        self._check_open()
        if not isinstance(context, AdditionalContext):
            raise TypeError(f"inject() takes an AdditionalContext, not {type(context).__name__}")
        if context.source.is_user:
            raise ValueError(
                "inject() refuses Source('user'): injected context is never the user's own words"
            )
        if self.turn_open or self._rewriting == "rewind":
            # during a rewind it waits, and is appended after the rewind
            self._rt.outbox.stage(context)
            return
        # spec: idle inject appends one sourced user/message and starts a flush; no turn, no model
        self._rt.append_context(context)
        self._save_when_idle()

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

    async def aclose(self) -> None:
        """End a running turn `disposed`, drop queued sends, flush, and refuse further input."""
        if self._closed:
            return
        self._closed = True
        rt = self._rt
        for queued in self._inbox:
            queued.handle.finish(Dropped("the agent was closed before this send ran"))
        self._inbox.clear()
        rt.drop_queue()
        self._stop_turn("disposed", keep_inbox=False)
        await self.when_idle()
        try:
            await rt.session.flush()
        except Exception:
            log.exception("session %s: final flush failed", self.session_id)
        try:
            await rt.close_gateway()
        finally:
            await rt.checkpointing.aclose()
            for cleanup in reversed(self._on_dispose):
                try:
                    await cleanup()
                except Exception:
                    log.exception("session %s: a closing cleanup failed", self.session_id)

    # --- extension points ------------------------------------------------------------------------

    def on_prompt(self, listener: PromptListener) -> Callable[[], None]:
        """Add a prompt-admission listener (a waterfall, in registration order)."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def on_tool_result(self, hook: ToolHook) -> Callable[[], None]:
        """Add a hook whose additional contexts join the outbox after the batch's results."""
        hooks = self._rt.tool_hooks
        hooks.append(hook)
        return lambda: hooks.remove(hook) if hook in hooks else None

    def register_area(self, area: ContextAreaImplementation) -> str:
        """Register a Context Area; returns its id in this session."""
        self._check_open()
        area_id = self._rt.coop.register(area)
        if isinstance(area, SubtaskArea) and area.active:
            self._rt.offer_subtask_done(area)
        self._save_when_idle()
        return area_id

    def area_changed(self, area_id: str) -> None:
        """An Area was changed outside a render (a command edited it): its state is recorded
        now, so a resume restores it as it is, and saved at once between turns."""
        self._check_open()
        self._rt.coop.report_state(self.area(area_id))
        self._save_when_idle()

    def pin(self, text: str) -> str:
        """Pin a note for the rest of the session. It enters at the tail of the conversation
        now and joins the stable floor (karma) at the next planned break, so the requests
        before that keep their prefix (DESIGN-NOTES, "Prefix stability")."""
        self._check_open()
        pin_id = self._rt.assembler.next_pin_id()
        self._rt.record(PinAdd(pin_id=pin_id, text=text))
        self._tell_pins(pin_note(pin_id, text), pin_id)
        self._save_when_idle()
        return pin_id

    def unpin(self, pin_id: str) -> bool:
        """Withdraw a pin: the model is told at the tail now, the floor drops it at the next
        planned break."""
        self._check_open()
        if pin_id not in dict(self._rt.assembler.pinned):
            return False
        self._rt.record(PinRemove(pin_id=pin_id))
        self._tell_pins(unpin_note(pin_id), pin_id)
        self._save_when_idle()
        return True

    def _tell_pins(self, note: str, pin_id: str) -> None:
        """A pin change reaches the model at the tail until the floor takes it; before the first
        floor there is nothing to wait for."""
        if self._rt.assembler.floor_built:
            self.inject(AdditionalContext(note, Source("pin", pin_id)))

    def request_model(self, name: str) -> ModelChange:
        """Bind the session to another model entry; it takes effect at the next turn start.

        Raises ConfigError naming the configured entries for an unknown name.
        """
        self._check_open()
        self._rt.assembler.config.model(name)
        if self._rt.gateway_factory is None:
            raise TrellisError("this agent was built without a gateway factory")
        bind = self._rt.assembler.bind(name)
        self._rt.record(bind)
        self._save_when_idle()
        return ModelChange(
            model=name,
            grant_epoch=bind.grant_epoch,
            effective="next_turn" if self.turn_open else "now",
        )

    async def set_mode(self, mode: PermissionMode) -> bool:
        """Decide the tool calls that need permission by `mode` from now on (a call already
        waiting for an answer keeps waiting); logged as `permission/mode`, and in the store when
        this returns between turns. False when the session is in that mode already. Raises
        ValueError for a name that is not a mode."""
        from engine.permission_mode import MODES

        self._check_open()
        if mode not in MODES:
            raise ValueError(f"no mode {mode!r}; the modes are {', '.join(MODES)}")
        if mode == self.mode:
            return False
        change = PermissionModeSet(mode=mode)
        self._rt.record(change)
        self._rt.permission.follow(change)
        if not self.turn_open:
            await self._rt.idle_flush()
        return True

    def record_command(self, line: str, result: str) -> None:
        """Log a slash command that changed the session with its answer (`command/run`), so a
        replay shows the exchange where it happened (`engine.commands` calls it)."""
        self._check_open()
        self._rt.record(CommandRun(line=line, result=result, label=COMMAND_LABEL))
        self._save_when_idle()

    async def compact(self, keep_groups: int = DEFAULT_KEEP_GROUPS) -> CompactionResult | None:
        """Summarize the oldest history groups (between turns only); None if nothing to compact."""
        from engine.agent.compactor import CompactionError, compact

        self._check_open()
        if self._rewriting is not None:
            raise CompactionError(f"cannot compact while a {self._rewriting} is under way")
        self._rewriting = "compaction"
        try:
            return await compact(self._rt, turn_open=self.turn_open, keep_groups=keep_groups)
        finally:
            self._rewriting = None

    async def rewind_points(self) -> list[RewoundTurn]:
        """The prompts a rewind can go back to (the turns of the history, oldest first), each
        with its time and the files its turn changed."""
        from engine.agent.rewind import history_turns

        self._check_open()
        return await history_turns(self._rt)

    async def plan_rewind(
        self, to_turn: int | None, *, code: bool = True, code_refused: str | None = None
    ) -> tuple[RewindPoint, CodePlan | None]:
        """Where a rewind to before turn `to_turn`'s prompt goes (None: an undo of the last
        rewind), and with `code` what it would do to the files — said before anything is
        touched (the files to write and remove, those changed by someone else, what no rewind
        brings back). `code_refused`: why a front end will not let Trellis write the files (an
        editor holds them). Raises `RewindError` as `rewind` does."""
        from engine.agent.code_rewind import plan_code
        from engine.agent.rewind import rewind_point, undo_point

        self._check_idle_for_rewind()
        if to_turn is None:
            point, undone = await undo_point(self._rt)
            if not undone.code_after and not code_refused:
                code = False  # it changed no file: there are none to put back
        else:
            point = await rewind_point(self._rt, to_turn)
        if not code:
            return point, None
        code_refused = code_refused or self.files_held_by_front_end()
        plan = await plan_code(self._rt, point.to_turn, point.seq, refused=code_refused)
        return point, plan

    async def rewind(
        self,
        to_turn: int | None,
        *,
        conversation: bool = True,
        code: bool = False,
        overwrite: bool = False,
        code_refused: str | None = None,
    ) -> RewindResult:
        """Take the session back to just before turn `to_turn`'s prompt (None: undo the last
        rewind). With `conversation`, the Context, the bound model, the mode, the pins and the
        Areas are again what they were then, exactly as a resume of the session would rebuild
        them; the log keeps every turn, and the next turn's number follows the last one's;
        steering and context waiting in the outbox are dropped (the result lists them). With
        `code`, the files the agent changed since are put back from the session's checkpoints
        and those it created removed; a file changed since by someone else is kept unless
        `overwrite`. The rewind is one `session/rewind` event, and an undo takes it back.
        Between turns only.

        Raises `RewindError` while a turn runs or is queued, for a turn that is not in the
        session's history (a number never used, or one an earlier rewind took out), for an undo
        with no rewind to undo, and for a rewind of the files only that cannot run (no
        checkpoints here: the reason)."""
        from engine.agent.code_rewind import plan_code, restore_code
        from engine.agent.rewind import RewindError, apply_rewind, rewind_point, undo_point

        self._check_idle_for_rewind()
        if not (conversation or code):
            raise RewindError("a rewind takes back the conversation, the files, or both")
        waiting = len(self._rt.outbox)  # dropped; what is staged while the rewind runs stays
        # a send made while the log is read back waits for the rewind, then runs
        self._rewriting = "rewind"
        try:
            rt = self._rt
            if to_turn is None:
                point, undone = await undo_point(rt)
                conversation = conversation and undone.conversation
                code = code and (undone.code_after is not None or code_refused is not None)
                if not (conversation or code):
                    raise RewindError("the last rewind changed nothing this undo could take back")
            else:
                point = await rewind_point(rt, to_turn)
            plan = None
            done = None
            if code:
                code_refused = code_refused or self.files_held_by_front_end()
                plan = await plan_code(rt, point.to_turn, point.seq, refused=code_refused)
                if plan.refused is not None and not conversation:
                    raise RewindError(f"cannot rewind the files: {plan.refused}")
                if plan.plan is not None:
                    done = await restore_code(rt, plan, overwrite=overwrite)
            return await apply_rewind(
                rt, point, conversation=conversation, code=done, plan=plan, waiting=waiting
            )
        finally:
            self._rewriting = None
            if self._inbox and self._runner is None and not self._closed:
                self._start_runner()

    def files_held_by_front_end(self) -> str | None:
        """Why a rewind may not write the files itself now: the front end serving the session
        writes them (an ACP editor that declared `fs.writeTextFile` may hold unsaved buffers the
        disk does not have, and would not see a file change under it); None when Trellis writes
        the disk. `rewind` and `plan_rewind` refuse the files' part with it, and the
        conversation's part still runs."""
        if self._rt.front_end().writer is None:
            return None
        return (
            "the editor connected to this session writes its files (it may hold unsaved "
            "changes): undo them there"
        )

    def _check_idle_for_rewind(self) -> None:
        from engine.agent.rewind import RewindError

        self._check_open()
        if self._runner is not None or self._turn is not None:
            raise RewindError("cannot rewind while a turn is running; cancel it or wait")
        if self._rewriting is not None:
            raise RewindError(f"cannot rewind while a {self._rewriting} is under way")

    async def fork(self) -> str:
        """Copy this session up to here into a new stored session; returns its id."""
        if self._turn is not None:
            raise TrellisError("cannot fork while a turn is running")
        if self._fork is None:
            raise TrellisError("this session is not stored, so it cannot be forked")
        await self._rt.session.flush()
        if not self._rt.session.stored:
            raise TrellisError(
                "this session is not stored yet (it holds no message), so it cannot be forked"
            )
        return await self._fork(self._rt.session.next_seq)

    # --- the runner ------------------------------------------------------------------------------

    def _save_when_idle(self) -> None:
        """Between turns a session-level change is flushed at once (like an idle inject); during a
        turn the turn's next flush takes it."""
        if not self.turn_open:
            self._rt.flush_soon(self._flushes)

    def _inbox_changed(self) -> None:
        self._rt.inbox_changed(tuple(q.submission.content for q in self._inbox))

    def _check_open(self) -> None:
        if self._closed:
            raise AgentClosedError(f"the agent for session {self.session_id} is disposed")

    def _stop_turn(self, reason: TurnEndReason, keep_inbox: bool) -> None:
        turn = self._turn
        if turn is None and self._preparing:
            # the submission is still being admitted or its turn opened: the turn it opens ends
            # at once with this reason (the user's words are kept, the model is not called)
            self._rt.keep_steering(keep_inbox)
            self._cancel_before_start = reason
            return
        if turn is None or turn.closing:
            return
        self._rt.keep_steering(keep_inbox)
        self._rt.permission.cancel_pending()
        turn.stop(reason)

    async def _run_inbox(self) -> None:
        self._rt.set_status("running")
        try:
            while self._inbox:
                queued = self._inbox.popleft()
                self._inbox_changed()
                await self._process(queued)
        finally:
            self._runner = None
            self._preparing = False  # a runner whose inbox was emptied before its first step
            self._cancel_before_start = None
            self._rt.set_status("idle")

    async def _process(self, queued: _Queued) -> None:
        self._preparing = True  # `_cancel_before_start` may already be set: see `send`
        try:
            await self._admit_and_run(queued.submission, queued.handle)
        finally:
            self._preparing = False
            self._cancel_before_start = None
            queued.handle.finish(Dropped("the turn did not run"))  # no-op once finished

    async def _admit_and_run(self, submission: PromptSubmission, handle: SendHandle) -> None:
        rt = self._rt
        # spec: admission runs before any turn exists; a blocked prompt appends nothing
        try:
            decision = await run_admission(self._listeners, submission)
        except Exception as exc:
            log.exception("prompt listener failed")
            message = rt.report_error(None, f"A prompt listener failed: {exc}")
            handle.finish(Blocked(message))
            return
        if isinstance(decision, Reject):
            rt.report_error(None, f"Prompt blocked: {decision.reason}")
            handle.finish(Blocked(decision.reason))
            return
        if self._closed:
            handle.finish(Dropped("the agent was closed while the prompt was admitted"))
            return  # disposed while admitting: like a queued send, it is dropped
        try:
            await self._open_turn(decision.content)
        except Exception as exc:
            # Nothing turn-level was appended: the runner goes on with the next send rather than
            # dying with the inbox (and `when_idle`/`aclose` raising).
            rt.assembler.end_turn()
            log.exception("session %s: the turn could not start", self.session_id)
            message = rt.report_error(None, f"The turn could not start: {exc}")
            handle.finish(Dropped(message))
            return
        await self._run_turn(submission, decision, handle)

    async def _open_turn(self, admitted: str) -> None:
        """Everything before `turn/start` that can fail: title, model binding, the floor."""
        self._title(admitted)
        await self._rt.bind_for_turn()
        rt = self._rt
        for block in await rt.assembler.begin_turn(rt.tools.configured_names, rt.model_id):
            rt.session.append(block)

    async def _run_turn(
        self, submission: PromptSubmission, decision: Allow, handle: SendHandle
    ) -> None:
        rt = self._rt
        number = rt.session.state.last_turn + 1
        # The Turn exists before turn/start is logged, so a subscriber reacting to turn/start
        # can already cancel it or stage into it.
        turn = Turn(rt, number)
        self._turn = turn
        self._preparing = False
        if self._closed:
            turn.stop("disposed")  # disposed while the turn was being opened
        elif self._cancel_before_start is not None:
            turn.stop(self._cancel_before_start)  # cancelled while admitting: keeps keep_inbox
        else:
            rt.keep_steering(False)
        handle.started(number)
        rt.session.append(TurnStart(turn=number))
        rewritten = decision.content != submission.content
        rt.append_user(
            decision.content,
            Source("user"),
            original_content=submission.content if rewritten else None,
            attachments=submission.attachments,
            # what a listener rewrote away may be what it meant to hide: exports redact it
            label=REWRITTEN_LABEL if rewritten else None,
        )
        for context in decision.additional_contexts:
            rt.append_context(context)
        rt.restage_kept_steering()
        task = asyncio.create_task(turn.run(), name=f"{self.session_id}-turn-{number}")
        try:
            await asyncio.shield(task)
            # after turn/end: what the turn changed, a cancelled command's leftovers included
            changes = await rt.checkpointing.end_turn(number)
            if changes is not None:
                rt.session.append(changes)
        except asyncio.CancelledError:
            # The runner itself was cancelled (loop shutdown): end the turn, then stop.
            turn.stop("disposed")
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            self._turn = None
            rt.assembler.end_turn()
            try:
                await rt.session.flush()  # durable: turn end
            except Exception as exc:
                log.exception("session %s: flush at turn end failed", self.session_id)
                rt.report_error(number, f"Saving the session failed: {exc}")
            # after the flush: whoever awaits the outcome (an ACP prompt's answer, a headless
            # run's exit) may rely on the turn's end being in the store
            handle.finish(TurnOutcome(number, turn.end_reason, turn.end_message))

    def _title(self, prompt: str) -> None:
        """spec: the title is the first line of the first prompt, trimmed (the admitted prompt,
        so a listener's redaction holds), cut to one reasonable line."""
        session = self._rt.session
        if session.titled:
            return
        line = next((ln.strip() for ln in prompt.splitlines() if ln.strip()), "")
        if line:
            if len(line) > TITLE_MAX_CHARS:
                line = line[: TITLE_MAX_CHARS - 1].rstrip() + "…"
            session.append(
                SessionTitle(title=line, label=PrivatizationLabel(cls=PrivacyClass.internal))
            )
