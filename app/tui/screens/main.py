"""The main screen: the live conversation, the prompt, the side panel and the status line.

A resumed session's tail is on screen before its Agent is open (the whole log loads meanwhile);
`attach` hands the screen the Agent, enables the input and bridges the Agent's events from the first
seq the screen has not shown. A session another process writes is `follow`ed instead: the same
bridge from a replica of it (`engine.replica`), with the input disabled saying who writes it. Engine events arrive as `EngineEvents` messages (app/tui/bridge.py) and
flow down from here: the transcript projection turns them into entry changes, the status line and
the side panel take plain views. Input goes back only through the Agent's public methods.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget

from app.attachment_files import attachments_of
from app.tui.bridge import EngineEvents, bridge
from app.tui.completion import (
    Offer,
    Suggestion,
    command_suggestions,
    current_mention,
    path_suggestions,
)
from app.tui.screens.inspector import ContextInspector, StepSpend
from app.tui.screens.rewind import RewindList, RewindRequest, rewind_notice
from app.tui.scrollback import Scrollback
from app.tui.widgets.completion_hint import CompletionHint
from app.tui.widgets.key_footer import KeyFooter
from app.tui.widgets.prompt_input import PromptInput
from app.tui.widgets.side_panel import GcRow, SidePanel
from app.tui.widgets.status_line import StatusLine
from app.tui.widgets.transcript_view import TranscriptView
from app.tui.widgets.window_breakdown import BreakdownView
from engine.agent import Agent
from engine.agent.code_rewind import CodePlan
from engine.agent.rewind import RewindPoint
from engine.agent.views import AssemblyView, outbox_view
from engine.commands import REGISTRY
from engine.config import Config
from engine.context.budget import CHARS_PER_TOKEN
from engine.context.usage import UsageTally, context_usage
from engine.errors import TrellisError
from engine.events import (
    AgentStatus,
    Attachment,
    Event,
    Figures,
    GcCollect,
    LiveEvent,
    ModelBind,
    OutboxChanged,
    Payload,
    PermissionModeSet,
    SessionRewind,
    SteerDropped,
    StepStart,
    UserMessage,
)
from engine.gateway.base import GatewayType
from engine.gc_policy import turn_freeze
from engine.permission_mode import PermissionMode
from engine.session import READ_CHUNK, Session
from replay.timeline import last_requests
from replay.transcript import Transcript

PROMPT_PLACEHOLDER = "Ask the agent · /help for commands · @ for files"
"""What the empty prompt says once the session is open: a new user's first screen is otherwise an
empty transcript above an empty box."""
STEER_PLACEHOLDER = "Steer the running turn · Esc cancels it"
DOUBLE_ESCAPE_S = 0.5
"""Two Esc within this many seconds on an empty prompt, while idle, open the rewind list; one
Esc keeps its meaning (it hides the suggestions, or does nothing)."""
"""While a turn runs, Enter sends to it (steering), not a new prompt."""
PANEL_EVENTS = frozenset(
    {"area/register", "area/state", "area/render", "area/cursor", "gc/collect"}
)


class MainScreen(Screen[None]):
    """One session, live."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel_turn", "Cancel turn"),
        # the same key while idle, on an empty prompt: twice opens the rewind list
        Binding("escape", "rewind_key", "Rewind", key_display="esc esc", show=False),
        Binding("f2", "toggle_panel", "Panel"),
        Binding("f3", "inspect", "Inspect"),
        Binding("f5", "next_mode", "Mode"),
        Binding("f8", "budget", "Budget", show=False),
        Binding("ctrl+o", "open_for_writing", "Open for writing"),
        Binding("ctrl+q", "app.quit", "Quit", priority=True),
    ]
    FOOTER_SPARE: ClassVar[tuple[str, ...]] = ("next_mode",)
    """What the footer leaves out first when it is narrow (`KeyFooter`): the status line names
    the mode, and F1 lists its key."""
    AUTO_FOCUS = "PromptInput"
    """Nothing else: the prompt is disabled while the Agent opens, and Textual's default (the
    first focusable widget) focused the conversation, so that focus and the prompt taking it
    back restyled every widget of the transcript (a resumed 22 KB reply: seconds before the
    first paint)."""

    DEFAULT_CSS = """
    MainScreen #body, MainScreen #conversation {
        height: 1fr;
    }
    """

    class OpenForWriting(Message):
        """The user asks to write the followed session here, now that its writer let go."""

    def __init__(
        self,
        transcript: Transcript | None = None,
        scrollback: Scrollback | None = None,
        *,
        config: Config | None = None,
        welcome: Widget | None = None,
    ) -> None:
        super().__init__()
        self.agent: Agent | None = None  # set by `attach` once the session is open
        self._welcome = welcome  # above the conversation until its first prompt
        self.transcript = transcript if transcript is not None else Transcript()
        self._scrollback = scrollback
        self._config = config
        # the log holds a request this run did not make (a resumed session's): F3 rebuilds it
        self._stored_request = False
        self._assemblies: list[AssemblyView] = []  # the last two, for the inspector's diff
        self._tally = UsageTally()  # the status line's token figures, folded from the events
        self._let_go = False  # a followed session's writer gave it back
        self._escaped_at: float | None = None  # the last lone Esc on an empty, idle prompt

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            with Vertical(id="conversation"):
                if self._welcome is not None:
                    yield self._welcome
                yield TranscriptView(self.transcript, scrollback=self._scrollback, id="transcript")
                yield CompletionHint(id="hint")
                prompt = PromptInput(id="prompt")
                prompt.disabled = True  # until the Agent is open
                yield prompt
            yield SidePanel(id="panel")
        yield StatusLine(id="status")
        yield KeyFooter()

    def on_mount(self) -> None:
        # kept, not queried per event: a query walks every mounted entry, and replies stream
        # hundreds of events a second
        self._view = self.query_one(TranscriptView)
        self._status = self.query_one(StatusLine)
        self._panel = self.query_one(SidePanel)
        self._panel.follow_width(self.app.size.width)
        prompt = self.query_one(PromptInput)
        prompt.cursor_blink = bool(getattr(self.app, "CURSOR_BLINK", True))
        self.query_one(StatusLine).status = "opening"

    def on_unmount(self) -> None:
        turn_freeze.release()  # closed mid-turn: nothing stays frozen

    async def attach(self, agent: Agent, *, from_seq: int) -> None:
        """The session's Agent is open (call once the screen is mounted): the events before
        `from_seq` are on screen already, and the status line and the GC log catch up on them from
        the Agent's log (read by range: a resumed Agent holds only its tail); the rest arrive
        through the bridge. Enables the input."""
        self.agent = agent
        model = agent.model
        status = self.query_one(StatusLine)
        status.model = model.name
        status.egress = model.egress.name
        status.status = agent.status
        status.mode = agent.mode
        await self._catch_up(agent.read_log, from_seq)
        if self._tally.figures is None:  # no request yet: nothing used of the bound window
            budget = agent.budget
            status.usage = context_usage(Figures(cap=budget.cap, window=budget.window))
        else:  # the last request, against the entry bound now (a `/model` may have followed it)
            self._rebase_usage(agent)
        self._refresh_panel()
        prompt = self.query_one(PromptInput)
        prompt.placeholder = PROMPT_PLACEHOLDER if agent.status == "idle" else STEER_PLACEHOLDER
        prompt.disabled = False
        prompt.focus()
        self.refresh_bindings()
        await bridge(agent, self, from_seq=from_seq)

    async def follow(self, replica: Session, *, from_seq: int, holder: str) -> None:
        """A session `holder` writes in another process, shown read-only: the events before
        `from_seq` are on screen, the status line and the GC log catch up on them from the
        replica, and the rest arrive through the bridge as the writer commits them."""
        self.writer_is(holder)
        await self._catch_up(replica.read, from_seq)
        await bridge(replica, self, from_seq=from_seq)

    def writer_is(self, holder: str) -> None:
        """The followed session is written by `holder` (at first, or after another process took
        it once its writer let go): read-only here."""
        self._let_go = False
        self._status.status = "following"
        self._status.note = f"read-only: {holder} writes it"
        self._placeholder(Content(f"Read-only while {holder} writes it"))
        self.refresh_bindings()

    def writer_let_go(self) -> None:
        """The followed session's writer gave it back: it can be opened for writing here."""
        self._let_go = True
        self._status.status = "let go"
        self._status.note = "its writer let go: Ctrl+O opens it for writing here"
        self._placeholder(Content("Its writer let go: Ctrl+O to write here"))
        self.refresh_bindings()

    def _placeholder(self, text: Content) -> None:
        # the writer's watch can report while the screen is being taken down: no prompt to tell
        for prompt in self.query(PromptInput):
            prompt.placeholder = text

    async def _catch_up(
        self, read: Callable[[int, int], Awaitable[Sequence[Event]]], end: int
    ) -> None:
        """What the status line and the GC log show of the events before `end`, which are not
        bridged: folded a chunk at a time (the whole log is never held), each widget set once."""
        totals = _CatchUp(self._tally)
        for start in range(0, end, READ_CHUNK):
            totals.take(await read(start, min(end, start + READ_CHUNK)))
        status = self.query_one(StatusLine)
        if totals.model and not status.model:  # a followed session's: no Agent names it
            status.model = totals.model
        if totals.mode is not None and status.mode is None:
            status.mode = totals.mode
        if self._tally.figures is not None:
            self._stored_request = True
            self._show_usage()
        if totals.collections:
            self.query_one(SidePanel).collections = tuple(totals.collections)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Inspecting and changing the mode need the Agent: disabled while the session opens or
        is followed.
        Cancelling needs a busy Agent and opening for writing a followed session whose writer
        let go: hidden otherwise, so the footer names only what a key does now."""
        if action in ("inspect", "next_mode") and self.agent is None:
            return None
        if action == "cancel_turn":
            return self._busy()
        if action == "rewind_key":
            return self.agent is not None and not self._busy() and not self._prompt_text()
        if action == "open_for_writing":
            return self._let_go  # hidden otherwise
        return True

    # --- the event stream ----------------------------------------------------------------------

    @on(EngineEvents)
    def _engine_events(self, message: EngineEvents) -> None:
        """The events that came since the last message; what they change of the Agent's views
        (its Areas, its last request) is read once for all of them."""
        stepped = areas_changed = False
        for event in message.take():
            self._engine_event(event)
            stepped = stepped or type(event.data) is StepStart
            areas_changed = areas_changed or (
                isinstance(event, Event) and event.type in PANEL_EVENTS
            )
        agent = self.agent
        if agent is None:  # a followed session: no Agent holds its Areas or its requests
            return
        if stepped:
            self._note_assembly()
        if areas_changed:
            self._panel.areas = agent.areas

    def _engine_event(self, event: Event | LiveEvent) -> None:
        """One event of the Agent, or of the followed session (stored events only, no Agent:
        what needs the Agent's state is left as it is)."""
        agent = self.agent
        if self._welcome is not None and type(event.data) is UserMessage:
            self._welcome.remove()  # the first prompt: the conversation takes its place
            self._welcome = None
        change = self.transcript.apply(event)
        if change:
            self._view.apply(change)
        status, panel = self._status, self._panel
        if self._tally.take(event.data):
            self._show_usage()
        match event.data:
            case AgentStatus(status=state):
                status.status = state
                if state == "idle":
                    turn_freeze.release()
                else:
                    turn_freeze.hold()
                if agent is not None:  # a followed session's prompt says who writes it
                    prompt = self.query_one(PromptInput)
                    prompt.placeholder = (
                        PROMPT_PLACEHOLDER if state == "idle" else STEER_PLACEHOLDER
                    )
                self.refresh_bindings()  # Esc cancels only while a turn is open
            case PermissionModeSet(mode=mode):
                status.mode = mode
            case ModelBind(model=model):
                status.model = model
                if agent is not None:
                    status.egress = agent.model.egress.name
                    self._rebase_usage(agent)
            case OutboxChanged() as changed if agent is not None:
                panel.outbox = outbox_view(changed)
            case SteerDropped(text=text):
                self.query_one(PromptInput).give_back(text)
                self.notify("Steering not delivered; it is back in the prompt.", severity="warning")
            case GcCollect() as collected:
                panel.collections = (*panel.collections, GcRow.of(collected))
            case SessionRewind() as rewind if agent is not None:
                self._rewound(agent, rewind)
            case _:
                pass

    def _show_usage(self) -> None:
        status, tally = self._status, self._tally
        status.usage = tally.current()
        self._panel.usage = status.usage
        status.session_tokens = tally.session_tokens
        status.session_estimated = tally.session_estimated
        status.session_cost = tally.session_cost

    def _rebase_usage(self, agent: Agent) -> None:
        """The last figures, against the window of the entry now bound (after a `/model`, or on
        a resume; while a turn runs a binding waits for the next turn, so nothing changes)."""
        usage = self._status.usage
        if usage is None:
            return
        budget = agent.budget
        self._status.usage = replace(
            usage, window=budget.window, cap_tokens=budget.cap // CHARS_PER_TOKEN
        )

    def _note_assembly(self) -> None:
        assert self.agent is not None
        assembly = self.agent.last_assembly
        if assembly is not None:
            self._assemblies = [*self._assemblies[-1:], assembly]
            self.query_one(SidePanel).assembly = assembly

    def _refresh_panel(self) -> None:
        assert self.agent is not None
        panel = self.query_one(SidePanel)
        panel.areas = self.agent.areas
        panel.outbox = self.agent.outbox
        panel.assembly = self.agent.last_assembly

    # --- input ---------------------------------------------------------------------------------

    @on(PromptInput.Changed, "#prompt")
    def _typing(self, message: PromptInput.Changed) -> None:
        self._escaped_at = None  # Esc, typing, Esc is not a double Esc
        prompt = self.query_one(PromptInput)
        if prompt.cycling:  # Tab put a suggestion in: the others stay offered
            return
        text = prompt.text
        mention = current_mention(text)
        if mention is not None and not text.startswith("/"):
            self._offer_paths(text, mention)
        else:
            self._offer(text, command_suggestions(text, REGISTRY.commands))

    @work(group="complete", exclusive=True)
    async def _offer_paths(self, text: str, mention: str) -> None:
        """Workspace files for `@`, looked up off the event loop."""
        if self.agent is None:
            return  # the input is disabled until the Agent is open
        root = Path(self.agent.workspace)
        self._offer(text, await asyncio.to_thread(path_suggestions, mention, root))

    def _offer(self, text: str, suggestions: list[Suggestion]) -> None:
        """What to offer for `text`: completions to choose from (the first highlighted), or only
        the usage of a command whose name is typed."""
        prompt = self.query_one(PromptInput)
        if prompt.text != text:  # typed on while the files were looked up
            return
        completions = tuple(s for s in suggestions if s.replacement != text)
        prompt.offer = Offer(text, completions) if completions else None
        hint = self.query_one(CompletionHint)
        hint.suggestions = completions or tuple(suggestions)
        hint.highlighted = 0 if completions else None

    @on(PromptInput.Offered)
    def _offered(self, message: PromptInput.Offered) -> None:
        hint = self.query_one(CompletionHint)
        if message.offer is None:
            hint.suggestions = ()
        else:
            hint.highlighted = message.offer.highlighted

    @on(PromptInput.Submitted)
    def _submitted(self, message: PromptInput.Submitted) -> None:
        text = message.text
        self.query_one(CompletionHint).suggestions = ()
        if self.agent is None:
            return  # the input is disabled until the Agent is open
        if text.strip() == "/help":  # the help screen lists the commands with the keys
            self.run_worker(self.app.run_action("help"), group="commands")
            return
        if text.strip() == "/model":  # the picker lists the models with what they are
            self.run_worker(self.app.run_action("pick_model"), group="commands")
            return
        if text.strip() == "/rewind":  # the list of prompts, then what to take back
            self.action_rewind()
            return
        if REGISTRY.is_command(text):
            self._run_command(text)
            return
        self._deliver(text)

    @work(group="input")
    async def _deliver(self, text: str) -> None:
        """Send (or steer) the words, with the files they mention as `@path` attached."""
        assert self.agent is not None  # `_submitted` delivers only once the Agent is open
        attachments: list[Attachment] = []
        if "@" in text:
            attachments, problems = await asyncio.to_thread(
                attachments_of, text, Path(self.agent.workspace)
            )
            for problem in problems:
                self.notify(f"not attached: {problem}", severity="warning", markup=False)
        try:
            if self.agent.turn_open:
                self.agent.steer(text)
                self.notify("Steering: delivered at the next safe point of this turn.")
            else:
                self.agent.send(text, attachments)
        except TrellisError as exc:
            self.notify(str(exc), severity="error", markup=False)

    @work(group="commands")
    async def _run_command(self, line: str) -> None:
        assert self.agent is not None
        try:
            result = await REGISTRY.run(self.agent, line)
        except TrellisError as exc:
            self.notify(str(exc), severity="error", title=line.split()[0], markup=False)
            return
        if result.leave:
            self.app.exit()
            return
        if result.changed:  # logged with its answer: the transcript shows the exchange
            self._refresh_panel()
            return
        self.notify(
            result.text,
            severity="information" if result.ok else "error",
            title=line.split()[0],
            markup=False,
        )
        self._refresh_panel()

    # --- actions -------------------------------------------------------------------------------

    @work(group="mode", exclusive=True)
    async def action_next_mode(self) -> None:
        """F5: the next permission mode of the cycle (ask, accept edits, read-only); the
        status line and the transcript show it from the `permission/mode` it logs."""
        from engine.permission_mode import next_mode

        agent = self.agent
        if agent is None:
            return
        try:
            await agent.set_mode(next_mode(agent.mode))
        except TrellisError as exc:
            self.notify(str(exc), severity="error", title="Mode", markup=False)

    def action_page_transcript(self, pages: int) -> None:
        """PageUp/PageDown in the prompt: read the conversation without leaving the input."""
        if pages < 0:
            self._view.action_page_up()
        else:
            self._view.action_page_down()

    def _busy(self) -> bool:
        """The Agent is working on a prompt: its status, not whether the turn has opened yet.
        `agent/status` turns `running` while the prompt is still admitted, before the turn
        exists, and only status changes refresh the keys: the footer composed then lacked Esc for
        the whole turn whenever it composed before the turn opened (seen under load). Esc during
        admission ends the turn as it opens (`Agent.cancel`)."""
        return self.agent is not None and self.agent.status != "idle"

    def _prompt_text(self) -> str:
        return self.query_one(PromptInput).text

    def action_rewind_key(self) -> None:
        """Esc on an empty prompt while idle: the second within `DOUBLE_ESCAPE_S` of the first
        opens the rewind list."""
        now = time.monotonic()
        first = self._escaped_at
        if first is not None and now - first <= DOUBLE_ESCAPE_S:
            self._escaped_at = None
            self.action_rewind()
        else:
            self._escaped_at = now

    @work(group="rewind", exclusive=True)
    async def action_rewind(self) -> None:
        """`/rewind`, or Esc twice: the session's prompts, then what to take back of the one
        chosen; the rewind itself runs once the user has confirmed."""
        from engine.agent.rewind import RewindError

        agent = self.agent
        if agent is None or isinstance(self.app.screen, RewindList):
            return
        try:
            points = await agent.rewind_points()
            try:
                undo, _ = await agent.plan_rewind(None, code=False)
            except RewindError:
                undo = None  # no rewind to undo
        except TrellisError as exc:
            self.notify(str(exc), severity="error", title="Rewind", markup=False)
            return
        if not points and undo is None:
            self.notify("Nothing to rewind: the session has no prompt yet.", title="Rewind")
            return

        async def plan(to_turn: int | None) -> tuple[RewindPoint, CodePlan | None]:
            return await agent.plan_rewind(to_turn, code=True)

        request = await self.app.push_screen_wait(RewindList(points, undo=undo, planner=plan))
        if request is not None and self.agent is agent:
            await self._rewind(agent, request)

    async def _rewind(self, agent: Agent, request: RewindRequest) -> None:
        """Carry out the rewind chosen, and say in a notice what was restored and what was not
        (the prompt comes back in the input with the event: `_rewound`)."""
        try:
            result = await agent.rewind(
                request.to_turn,
                conversation=request.conversation,
                code=request.code,
                overwrite=request.overwrite,
            )
        except TrellisError as exc:
            self.notify(str(exc), severity="error", title="Rewind", markup=False)
            return
        message, attention = rewind_notice(result)
        self.notify(
            message,
            title="Rewind",
            severity="warning" if attention else "information",
            timeout=12,
            markup=False,
        )

    def _rewound(self, agent: Agent, rewind: SessionRewind) -> None:
        """The session was rewound (from the dialog, or `/rewind N` as a command): after a
        conversation rewind the prompt is back in the input to edit; the mode and the panel are
        the restored ones (a restored mode is logged only when it falls back)."""
        if rewind.conversation and rewind.prompt and rewind.undoes is None:
            prompt = self.query_one(PromptInput)
            prompt.give_back(rewind.prompt)
            prompt.focus()
        self._status.mode = agent.mode
        self._refresh_panel()

    def action_cancel_turn(self) -> None:
        if self._busy():
            assert self.agent is not None
            self.agent.cancel()

    def action_open_for_writing(self) -> None:
        self.post_message(self.OpenForWriting())

    def action_toggle_panel(self) -> None:
        self._panel.toggle()

    def on_resize(self, event: events.Resize) -> None:
        self._panel.follow_width(event.size.width)

    def action_inspect(self, focus: str | None = None) -> None:
        if self.agent is None:
            return
        assemblies = self._assemblies
        current = assemblies[-1] if assemblies else self.agent.last_assembly
        if current is None and self._stored_request:
            self._inspect_stored(self.agent)
            return
        previous = assemblies[-2] if len(assemblies) > 1 else None
        self.app.push_screen(
            ContextInspector(current, previous, StepSpend.of(self._tally), focus=focus)
        )

    @on(BreakdownView.Inspect)
    def _inspect_part(self, message: BreakdownView.Inspect) -> None:
        self.action_inspect(message.ref)

    def action_budget(self) -> None:
        """What fills the window, its largest parts under the keyboard; again: back to the prompt."""
        if not self._panel.show_budget():
            self.query_one(PromptInput).focus()

    @work(exclusive=True, group="inspect-stored")
    async def _inspect_stored(self, agent: Agent) -> None:
        """A resumed session's last request, which this run's Agent did not assemble: rebuilt
        from the log as replay shows it (read by range, replayed off the event loop)."""
        self.notify("Rebuilding the last request from the log...", timeout=2)
        events: list[Event] = []
        end = len(agent.log)
        for start in range(0, end, READ_CHUNK):
            events += await agent.read_log(start, min(end, start + READ_CHUNK))
        gateway_type = GatewayType(agent.model.provider)
        current, previous = await asyncio.to_thread(
            last_requests, events, gateway_type, config=self._config
        )
        if self.agent is not agent or not self.is_attached:
            return
        if self._assemblies or agent.last_assembly is not None:  # a turn ran meanwhile
            self.action_inspect()
            return
        self.app.push_screen(ContextInspector(current, previous, StepSpend.of(self._tally)))


class _CatchUp:
    """The token figures (into the screen's tally), the model bound last, the mode set last and
    every collection of the events a screen did not bridge, folded one chunk of the log at a
    time."""

    def __init__(self, tally: UsageTally) -> None:
        self.tally = tally
        self.model = ""
        self.mode: PermissionMode | None = None
        self.collections: list[GcRow] = []

    def take(self, events: Sequence[Event]) -> None:
        tally = self.tally
        for event in events:
            data = event.data
            if not tally.take(data) and (take := _CATCH_UP.get(type(data))) is not None:
                take(self, data)

    def _collection(self, data: GcCollect) -> None:
        self.collections.append(GcRow.of(data))

    def _model(self, data: ModelBind) -> None:
        self.model = data.model

    def _mode(self, data: PermissionModeSet) -> None:
        self.mode = data.mode


_CATCH_UP: dict[type[Payload], Callable[[_CatchUp, Any], None]] = {
    GcCollect: _CatchUp._collection,
    ModelBind: _CatchUp._model,
    PermissionModeSet: _CatchUp._mode,
}
"""What `_CatchUp` keeps of each kind of event, by the payload's exact class (see `Payload`: a
table, as a resumed session's screen folds every event of its log)."""
