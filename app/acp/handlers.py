"""The session operations a client asks for, against the session table and the Agent: one
`SessionHandlers` per connection, holding the sessions that connection opened.

`METHODS` names each request a connection answers and the schema model its params must fit
(`app.acp.protocol` checks them); `SessionHandlers.handle` runs one and returns its result (or an
`Answer` with what follows it), raising what `AcpProtocol.send_error` turns into an error answer.
What they send goes through the connection (`app.acp.connection`), which owns the waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from acp.exceptions import RequestError
from acp.meta import PROTOCOL_VERSION
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    CancelNotification,
    CloseSessionRequest,
    CloseSessionResponse,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    DeleteSessionRequest,
    DeleteSessionResponse,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionRequest,
    NewSessionResponse,
    PromptCapabilities,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionDeleteCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionConfigOptionSelectRequest,
    SetSessionModeRequest,
    SetSessionModeResponse,
    TextContentBlock,
    UnstructuredCommandInput,
)

from app.acp import modes, rpc
from app.acp.feed import Feed, SessionUpdate, event_params, update_params
from app.acp.mcp import ClientMcpServer
from app.acp.opening import SessionOpenError
from app.acp.prompt import STOP_REASONS, USAGE_META, prompt_of, read_linked_files, turn_usage
from app.acp.protocol import Methods, Notification, Request
from app.acp.sessions import AcpSession
from engine.agent import Agent
from engine.collector import collector_paused
from engine.commands import REGISTRY
from engine.events import Event, TurnEnd
from engine.message import AdditionalContext, Source
from engine.os_text import storable_os_text
from engine.session import READ_CHUNK
from engine.store.errors import StoreError, UnknownSessionError
from engine.tools.tool import DEFAULT_SECRET_PATTERNS
from replay.acp import AcpProjection

if TYPE_CHECKING:
    from app.acp.connection import AcpConnection

LIST_PAGE = 50
"""Sessions per `session/list` page."""

METHODS: Methods = {
    "initialize": InitializeRequest,
    "session/new": NewSessionRequest,
    "session/load": LoadSessionRequest,
    "session/resume": ResumeSessionRequest,
    "session/close": CloseSessionRequest,
    "session/list": ListSessionsRequest,
    "session/delete": DeleteSessionRequest,
    "session/prompt": PromptRequest,
    "session/set_config_option": SetSessionConfigOptionSelectRequest,
    "session/set_mode": SetSessionModeRequest,
    "_trellis/inject": None,
    "_trellis/events": None,
}
"""Every request a connection answers, with the model its params must fit."""


def agent_version() -> str:
    try:
        return version("trellis")
    except PackageNotFoundError:
        return "unknown"


@dataclass(slots=True)
class _Opened:
    """A session this connection opened, and its feed (None for a read-only session that is not
    followed)."""

    session: AcpSession
    feed: Feed | None
    feed_from: int


@dataclass(frozen=True, slots=True)
class Answer:
    """A result and what follows it: notifications (e.g. `available_commands_update`) or, with
    `after`, what sends them once it is awaited."""

    result: Any
    then: tuple[tuple[str, Any], ...] = ()
    after: Callable[[], Awaitable[None]] | None = None


Handler = Callable[[Any], Awaitable[Any]]


class SessionHandlers:
    """The request handlers of one connection, and the sessions it opened."""

    def __init__(self, connection: AcpConnection) -> None:
        self._connection = connection
        self._server = connection.server
        self._protocol = connection.protocol
        self._opened: dict[str, _Opened] = {}
        self._handlers: dict[str, Handler] = {
            "initialize": self._initialize,
            "session/new": self._new,
            "session/load": self._load,
            "session/resume": self._resume,
            "session/close": self._close,
            "session/list": self._list,
            "session/delete": self._delete,
            "session/prompt": self._prompt,
            "session/set_config_option": self._set_config_option,
            "session/set_mode": self._set_mode,
            "_trellis/inject": self._inject,
            "_trellis/events": self._catch_up,
        }

    async def handle(self, request: Request) -> Any:
        """Run `request` (a method of `METHODS`, its params checked): its result, a schema model
        or an `Answer`; raises what becomes its error answer."""
        return await self._handlers[request.method](request.params)

    def notified(self, notification: Notification) -> None:
        """`session/cancel`: end this connection's prompts to the session that came before now
        (the protocol has marked them, so one not at the Agent yet does not run)."""
        assert isinstance(notification.params, CancelNotification)
        self.cancel_prompt(notification.params.session_id)

    def cancel_prompt(self, session_id: str) -> None:
        """The turn this connection's prompt runs in the session ends `cancelled`."""
        opened = self._opened.get(session_id)
        if opened is not None and self._protocol.prompts(session_id):
            self._cancel_agent(opened)

    def _cancel_agent(self, opened: _Opened) -> None:
        agent = opened.session.agent
        if agent is not None and opened.session.prompting is self._connection:
            agent.cancel()  # the one sent ends `cancelled` (even before its first step)

    def cancel_prompts(self) -> None:
        """The connection is closing: the turns of its prompts end `cancelled`."""
        for opened in self._opened.values():
            self._cancel_agent(opened)

    async def let_go_all(self) -> None:
        """The connection is closed: every session it opened is let go."""
        for opened in list(self._opened.values()):
            await self._let_go(opened)
        self._opened.clear()

    async def show_terminal(self, session_id: str, call_id: str, terminal_id: str) -> None:
        """The tool call `call_id` runs in the client's terminal `terminal_id`: its updates on
        this connection embed that terminal (nothing for a session not open here)."""
        opened = self._opened.get(session_id)
        if opened is not None and opened.feed is not None:
            await opened.feed.show_terminal(call_id, terminal_id)

    async def caught_up(self, session_id: str) -> None:
        """Wait until the session's updates so far are sent (nothing for a session not open)."""
        opened = self._opened.get(session_id)
        if opened is not None:
            await self._caught_up(opened)

    async def _initialize(self, request: InitializeRequest) -> InitializeResponse:
        """The agent's capabilities; the protocol takes the client's from `request` once this
        answer is sent."""
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                    delete=SessionDeleteCapabilities(),
                ),
            ),
            agent_info=Implementation(
                name=self._server.options.agent_name, title="Trellis", version=agent_version()
            ),
            auth_methods=[],
        )

    async def _new(self, request: NewSessionRequest) -> Answer:
        cwd = await self._server.workspace(request.cwd)
        session = await self._server.sessions.new(cwd, request.mcp_servers, self._connection.id)
        self._attach(session, AcpProjection(session.workspace))
        return Answer(
            NewSessionResponse(
                session_id=session.id,
                config_options=_model_options(session.agent),
                modes=modes.mode_state(modes.current_mode(session.agent)),
            ),
            then=self._opening_notes(session),
        )

    async def _load(self, request: LoadSessionRequest) -> Answer:
        session = await self._stored(request.session_id, request.cwd, request.mcp_servers)
        # the whole conversation, in log order, through the translator live prompts use; then
        # the live feed goes on from the first event not replayed, with the same translator state
        projection = AcpProjection(session.workspace)
        until = session.next_seq
        try:
            await self._replay(session, projection, until)
        except BaseException:
            await self._server.sessions.release(session, self._connection.id)
            raise
        self._attach(session, projection, from_seq=until)
        meta = {"trellis/readOnly": session.read_only} if session.read_only else None
        mode = modes.mode_state(modes.current_mode(session.agent, projection.mode))
        return Answer(
            LoadSessionResponse(field_meta=meta, modes=mode), after=self._once_open(session)
        )

    async def _resume(self, request: ResumeSessionRequest) -> Answer:
        """`session/load` without the replay: the client shows the conversation already, and the
        feed goes on from the log's end."""
        session = await self._stored(request.session_id, request.cwd, request.mcp_servers or [])
        self._attach(session, AcpProjection(session.workspace))
        meta = {"trellis/readOnly": session.read_only} if session.read_only else None
        # the mode is known once the Agent opens (the opening notes send it) unless it is open
        mode = modes.mode_state(modes.current_mode(session.agent))
        return Answer(
            ResumeSessionResponse(field_meta=meta, modes=mode), after=self._once_open(session)
        )

    async def _stored(
        self, session_id: str, cwd_text: str, servers: Sequence[ClientMcpServer]
    ) -> AcpSession:
        """A stored session held for this connection (load and resume): its cwd must be the one
        the client names, under the served roots. Opened again, its old feed stops."""
        cwd = await self._server.workspace(cwd_text)
        store = await self._server.sessions.store()
        info = await store.info(session_id)
        if info.cwd != storable_os_text(str(cwd)):
            raise RequestError(
                rpc.INVALID_PARAMS,
                f"Invalid params: cwd: session {info.id} belongs to {info.cwd}, not {cwd_text}",
            )
        previous = self._opened.pop(info.id, None)
        if previous is not None and previous.feed is not None:  # opened again: followed again,
            await previous.feed.stop()  # the session stays held (a prompt of ours may run)
        return await self._server.sessions.load(info.id, servers, self._connection.id)

    def _once_open(self, session: AcpSession) -> Callable[[], Awaitable[None]]:
        async def once_open() -> None:
            """After the answer: the Agent opens (app.acp.opening), then the opening notes, or
            the reason it could not open."""
            try:
                await session.ready()
            except SessionOpenError as failed:
                await self._say(session.id, f"[trellis] {failed}\n")
                return
            for method, note in self._opening_notes(session):
                await self._connection.notify(method, note)

        return once_open

    async def _close(self, request: CloseSessionRequest) -> CloseSessionResponse:
        """As `session/cancel`, then let the session go: its feed stops, and its Agent is
        disposed when no other connection holds it. Another request for it is -32002 until
        it is loaded or resumed again."""
        opened = self._opened.pop(request.session_id, None)
        if opened is None:
            raise RequestError(
                rpc.UNKNOWN_SESSION,
                f"unknown session {request.session_id!r} on this connection",
                {"sessionId": request.session_id},
            )
        if self._protocol.cancel_prompts(opened.session.id):
            self._cancel_agent(opened)
        await self._connection.prompts_answered(opened.session.id)  # `cancelled`, or as they ended
        await self._let_go(opened)
        return CloseSessionResponse()

    async def _delete(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
        """A stored session under the served roots, deleted; refused while it is open (here,
        by any connection, or by another process's writer)."""
        store = await self._server.sessions.store()
        info = await store.info(request.session_id)
        if not _under(info.cwd, self._served_roots()):
            raise UnknownSessionError(info.id)
        if self._server.sessions.get(info.id) is not None:
            raise RequestError(
                rpc.SESSION_BUSY,
                f"session {info.id} is open; close it (session/close) before deleting it",
            )
        from engine.checkpoints.sessions import delete_session
        from engine.paths import data_dir

        # a prune that fails is logged; the response has no place for it
        await delete_session(store, info.id, data_dir())
        return DeleteSessionResponse()

    def _served_roots(self) -> list[str]:
        """The served roots as a stored session's cwd is written: resolved."""
        return [str(root.resolve()) for root in self._server.options.roots]

    async def _replay(self, session: AcpSession, projection: AcpProjection, until: int) -> None:
        """The log before `until` as `session/load` sends it, a range of `READ_CHUNK` events at a
        time: read, translated and handed to the connection (which gives the loop back after
        each), so a long session never sits in memory whole. The next range is read (on the
        store's thread) while one is translated and written."""

        def read(start: int) -> asyncio.Task[Sequence[Event]] | None:
            if start >= until:
                return None
            return asyncio.ensure_future(session.read(start, min(until, start + READ_CHUNK)))

        encoder = rpc.UpdateEncoder(session.id)
        start, reading = 0, read(0)
        try:
            # bulk work that makes no cycles (engine/collector.py); paused for the whole
            # replay, since each re-enabling walked what the ranges had left
            with collector_paused():
                while reading is not None:
                    chunk = await reading
                    if not chunk:
                        raise StoreError(
                            f"session {session.id}: no events from seq {start} to replay"
                        )
                    start += len(chunk)
                    reading = read(start)
                    frames = self._protocol.encode_updates(encoder, projection.replay(chunk))
                    await self._connection.send_range(frames)
        finally:
            if reading is not None:
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)

    async def _list(self, request: ListSessionsRequest) -> ListSessionsResponse:
        cwd = None
        if request.cwd is not None:
            cwd = storable_os_text(str(await self._server.workspace(request.cwd)))
        store = await self._server.sessions.store()
        try:
            page = await store.list(cwd=cwd, limit=LIST_PAGE, cursor=request.cursor)
        except ValueError as error:
            raise RequestError(rpc.INVALID_PARAMS, f"Invalid params: cursor: {error}") from None
        roots = self._served_roots()
        shown = [
            SessionInfo(
                session_id=info.id,
                cwd=info.cwd,
                title=info.title or None,
                updated_at=datetime.fromtimestamp(info.updated, UTC).isoformat(),
            )
            for info in page.sessions
            if _under(info.cwd, roots)
        ]
        return ListSessionsResponse(sessions=shown, next_cursor=page.next_cursor)

    async def _prompt(self, request: PromptRequest) -> PromptResponse:
        opened = self._open_session(request.session_id)
        session = opened.session
        if session.read_only:
            raise RequestError(rpc.SESSION_READ_ONLY, session.read_only)
        if session.prompting is not None or (session.agent is not None and session.agent.turn_open):
            raise RequestError(
                rpc.SESSION_BUSY,
                f"session {session.id} is already running a prompt; wait for its answer or "
                "send session/cancel",
            )
        prompt = prompt_of(request.prompt)
        session.prompting = self._connection
        try:
            if prompt.attachments:  # the files its links name, read while the session is held
                workspace = Path(session.workspace)
                prompt = await asyncio.to_thread(read_linked_files, prompt, workspace)
            agent = await self._agent(opened)
            if self._protocol.prompt_cancelled(
                session.id
            ):  # cancelled before it reached the Agent: nothing ran
                return PromptResponse(stop_reason="cancelled")
            start = len(agent.log)
            if not prompt.attachments and REGISTRY.is_command(prompt.text):
                return await self._command(opened, prompt.text, start)
            handle = agent.send(prompt.text, prompt.attachments)
            try:
                outcome = await handle
            except asyncio.CancelledError:  # the connection dropped: the turn ends, stored
                agent.cancel()
                await handle
                raise
            await self._caught_up(opened)
        finally:
            if session.prompting is self._connection:
                session.prompting = None
        from engine.agent.send import Blocked, Dropped

        if isinstance(outcome, Blocked):
            await self._say(session.id, f"The prompt was blocked: {outcome.reason}")
            return PromptResponse(stop_reason="refusal")
        if isinstance(outcome, Dropped):
            raise RequestError(
                rpc.TURN_FAILED,
                f"the prompt did not run: {outcome.reason}",
                {"details": outcome.reason},
            )
        response = _stop(outcome.reason, outcome.message)
        return with_usage(response, await agent.read_log(start))

    async def _command(self, opened: _Opened, line: str, start: int) -> PromptResponse:
        """A slash command from the engine's registry; its text goes to the client as a message
        (one that changed the session is logged, and the feed sends its answer from the log).
        A command that runs a turn (`/subtask`) answers with that turn's stop reason."""
        agent = opened.session.agent
        assert agent is not None
        options = _model_options(agent)
        result = await REGISTRY.run(agent, line)
        await agent.when_idle()
        await self._caught_up(opened)
        if not result.changed:
            await self._say(opened.session.id, result.text)
        changed = _model_options(agent)
        if changed != options:  # `/model NAME`, `/mode NAME`: the options as they are now
            update = ConfigOptionUpdate(
                session_update="config_option_update", config_options=changed or []
            )
            await self._connection.notify(
                "session/update", update_params(opened.session.id, update)
            )
        ends = [e.data for e in await agent.read_log(start) if isinstance(e.data, TurnEnd)]
        return (
            _stop(ends[-1].reason, ends[-1].message)
            if ends
            else PromptResponse(stop_reason="end_turn")
        )

    async def _set_config_option(
        self, request: SetSessionConfigOptionSelectRequest
    ) -> SetSessionConfigOptionResponse:
        agent = await self._agent(self._open_session(request.session_id))
        if request.config_id == modes.MODE_OPTION:
            await modes.set_mode(agent, request.value, "value")
            return SetSessionConfigOptionResponse(config_options=_model_options(agent))
        if request.config_id != "model":
            raise RequestError(
                rpc.INVALID_PARAMS,
                f"Invalid params: configId: unknown option {request.config_id!r} (model, mode)",
            )
        if request.value not in agent.model_names():
            known = ", ".join(agent.model_names())
            raise RequestError(
                rpc.INVALID_PARAMS,
                f"Invalid params: value: no model {request.value!r} (configured: {known})",
            )
        agent.request_model(request.value)
        return SetSessionConfigOptionResponse(config_options=_model_options(agent))

    async def _set_mode(self, request: SetSessionModeRequest) -> SetSessionModeResponse:
        agent = await self._agent(self._open_session(request.session_id))
        await modes.set_mode(agent, request.mode_id, "modeId")
        return SetSessionModeResponse()

    async def _inject(self, params: Any) -> dict[str, Any]:
        """`_trellis/inject {sessionId, content, source?}`: context, never the user's words."""
        session_id, content = params.get("sessionId"), params.get("content")
        source = params.get("source", "client")
        for name, value in (("sessionId", session_id), ("content", content), ("source", source)):
            if not isinstance(value, str) or not value:
                raise RequestError(
                    rpc.INVALID_PARAMS, f"Invalid params: {name}: a non-empty string is required"
                )
        agent = await self._agent(self._open_session(session_id))
        kind, _, name = source.partition(":")
        try:
            agent.inject(AdditionalContext(content, source=Source(kind, name)))
        except ValueError as error:
            raise RequestError(rpc.INVALID_PARAMS, f"Invalid params: source: {error}") from None
        return {}

    async def _catch_up(self, params: Any) -> dict[str, Any]:
        """`_trellis/events {sessionId, fromSeq}`: the stored events from `fromSeq` up to where
        the live `_trellis/event`s began, so an opted-in client has the whole log."""
        session_id, from_seq = params.get("sessionId"), params.get("fromSeq", 0)
        if not isinstance(session_id, str):
            raise RequestError(
                rpc.INVALID_PARAMS, "Invalid params: sessionId: a string is required"
            )
        if not isinstance(from_seq, int) or isinstance(from_seq, bool) or from_seq < 0:
            raise RequestError(
                rpc.INVALID_PARAMS, "Invalid params: fromSeq: a seq (0 or more) is required"
            )
        opened = self._open_session(session_id)
        for event in await opened.session.read(from_seq, opened.feed_from):
            await self._connection.notify("_trellis/event", event_params(session_id, event))
        return {"nextSeq": opened.feed_from}

    # --- sessions ------------------------------------------------------------------------------

    def _open_session(self, session_id: str) -> _Opened:
        opened = self._opened.get(session_id)
        if opened is None:
            raise RequestError(
                rpc.UNKNOWN_SESSION,
                f"unknown session {session_id!r} on this connection: "
                "open it with session/new or session/load first",
                {"sessionId": session_id},
            )
        return opened

    async def _agent(self, opened: _Opened) -> Agent:
        """The session's Agent, once open; -32011 for a read-only session, -32014 (the engine
        refused) when it could not be opened."""
        agent = await opened.session.ready()
        if agent is None:
            raise RequestError(rpc.SESSION_READ_ONLY, opened.session.read_only)
        return agent

    def _attach(
        self, session: AcpSession, projection: AcpProjection, *, from_seq: int | None = None
    ) -> None:
        start = session.next_seq if from_seq is None else from_seq
        feed = None
        if session.live:
            if session.replica is not None:  # followed: every event comes from the store, the
                projection.replaying = True  # words of the other process's client included
            feed = Feed(
                session.id,
                session.events,
                projection,
                self._connection.deliver,
                from_seq=start,
                engine_events=self._protocol.wants_events,
                deliver_now=self._connection.deliver_now(),
                secret_patterns=lambda: _secret_patterns(session),
            )
        self._opened[session.id] = _Opened(session, feed, start)

    async def _let_go(self, opened: _Opened) -> None:
        if opened.feed is not None:
            await opened.feed.stop()
        await self._server.sessions.release(opened.session, self._connection.id)

    async def _caught_up(self, opened: _Opened) -> None:
        if opened.feed is not None and opened.session.agent is not None:
            await opened.feed.caught_up(len(opened.session.agent.log) - 1)

    def _opening_notes(self, session: AcpSession) -> tuple[tuple[str, Any], ...]:
        """After `session/new` / `session/load` answers: the commands, the model and mode options,
        the mode, and a line for each client MCP server that did not start."""
        notes: list[SessionUpdate] = [
            AvailableCommandsUpdate(
                session_update="available_commands_update",
                available_commands=[
                    AvailableCommand(
                        name=command.name,
                        description=command.description,
                        input=AvailableCommandInput(
                            UnstructuredCommandInput(hint=command.input_hint)
                        )
                        if command.input_hint
                        else None,
                    )
                    for command in REGISTRY.commands
                    if command.in_editors
                ],
            )
        ]
        options = _model_options(session.agent)
        if options:
            notes.append(
                ConfigOptionUpdate(session_update="config_option_update", config_options=options)
            )
        if session.agent is not None:  # the mode it opened in (a resume's answer could not know)
            notes.append(
                CurrentModeUpdate(
                    session_update="current_mode_update", current_mode_id=session.agent.mode
                )
            )
        for failure in session.servers.failures:
            notes.append(_message(f"[trellis] {failure}\n"))
        return tuple(("session/update", update_params(session.id, note)) for note in notes)

    async def _say(self, session_id: str, text: str) -> None:
        if text:
            await self._connection.notify(
                "session/update", update_params(session_id, _message(text))
            )


def _secret_patterns(session: AcpSession) -> tuple[str, ...]:
    agent = session.agent
    return agent.secret_patterns if agent is not None else DEFAULT_SECRET_PATTERNS


def with_usage(response: PromptResponse, turn: Sequence[Event]) -> PromptResponse:
    """The answer with the turn's reported tokens under `_meta["usage"]` (`turn_usage`)."""
    usage = turn_usage(turn)
    if usage is None:
        return response
    return response.model_copy(update={"field_meta": {USAGE_META: usage}})


def _stop(reason: Any, message: str) -> PromptResponse:
    stop = STOP_REASONS.get(reason)
    if stop is None:  # error, budget: the message says what went wrong
        summary = f"the turn ended with {reason}: {message}".rstrip(": ")
        raise RequestError(rpc.TURN_FAILED, summary, {"details": message or summary})
    return PromptResponse(stop_reason=stop)


def _message(text: str) -> AgentMessageChunk:
    """A note of Trellis's own (a command's output, an opening failure): a message by itself."""
    return AgentMessageChunk(
        session_update="agent_message_chunk",
        content=TextContentBlock(type="text", text=text),
        message_id=f"trellis-{uuid4().hex}",
    )


def _model_options(agent: Agent | None) -> list[Any] | None:
    if agent is None:
        return None
    model = agent.model
    return [
        SessionConfigOptionSelect(
            id="model",
            name="Model",
            category="model",
            type="select",
            current_value=model.next_name,
            options=[
                SessionConfigSelectOption(value=name, name=name) for name in agent.model_names()
            ],
        ),
        modes.mode_option(agent.mode),
    ]


def _under(cwd: str, roots: Sequence[str]) -> bool:
    """Whether a stored session's cwd lies under one of `roots` (resolved, as stored)."""
    return any(cwd == root or cwd.startswith(root.rstrip("/") + "/") for root in roots)
