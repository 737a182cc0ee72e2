"""The ACP protocol core, without I/O: a transport hands it one incoming message at a time
(`AcpConnection.receive`) and gives it a `Send` for what goes out.

`AcpServer` is process-wide: it holds the store and one Agent per session, shared by every
connection that opens the session (`app.acp.sessions`). `AcpConnection` is one client: it answers
requests (each in its own task, so a long prompt never blocks a `session/cancel`), sends
`session/update` notifications through one feed per open session (`app.acp.feed`, translated by
`replay.acp`) and asks the client for permission. Every failure inside a handler becomes a JSON-RPC
error answer for that request only; the connection and the other sessions go on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from acp.exceptions import RequestError
from acp.meta import PROTOCOL_VERSION
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    CancelNotification,
    ClientCapabilities,
    CloseSessionRequest,
    CloseSessionResponse,
    ConfigOptionUpdate,
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
    TextContentBlock,
    UnstructuredCommandInput,
)
from pydantic import BaseModel, ValidationError

from app.acp import rpc
from app.acp.feed import DeliverNow, Feed, SessionUpdate, event_params, update_params
from app.acp.mcp import ClientMcpServer
from app.acp.opening import SessionOpenError
from app.acp.permission import answer_of, permission_request
from app.acp.prompt import STOP_REASONS, prompt_of, read_linked_files
from app.acp.sessions import AcpSession, SessionTable
from engine.agent import Agent
from engine.collector import collector_paused
from engine.commands import REGISTRY
from engine.errors import TrellisError
from engine.events import Event, TurnEnd
from engine.message import AdditionalContext, Source
from engine.os_text import storable_os_text
from engine.session import READ_CHUNK
from engine.store.errors import StoreError, UnknownSessionError
from engine.store.settings import StoreSettings
from engine.tools.permission import PermissionAnswer, PermissionQuestion
from replay.acp import AcpProjection, AcpUpdate

log = logging.getLogger(__name__)

Send = Callable[[str], Awaitable[None]]
"""One outgoing JSON-RPC message, already serialized (at most `rpc.MAX_OUTGOING_BYTES`)."""


@runtime_checkable
class SendNow(Protocol):
    """A `Send` that can also write without waiting (the WebSocket and stdio transports):
    `ready()` says whether it can take a message at once (open, below its high-water mark), then
    `write(text)` takes it as the send would. The feeds write streamed updates this way from
    inside the engine's event callbacks; a transport that is not ready is sent to as usual."""

    def ready(self) -> bool: ...

    def write(self, text: str) -> None: ...

    def write_encoded(self, messages: Sequence[bytes]) -> None:
        """Messages already encoded (UTF-8, each within `rpc.MAX_OUTGOING_BYTES`), taken as
        `write` takes each, in order: what `session/load` writes a range of at once."""


EVENTS_META_KEY = "trellis/events"
"""`clientCapabilities._meta["trellis/events"] = true`: the client wants every engine event."""

LIST_PAGE = 50
"""Sessions per `session/list` page."""


@dataclass(frozen=True, slots=True)
class AcpOptions:
    """What the server needs to open sessions.

    `roots`: a session's cwd must lie under one of them. `store`: which store holds the sessions
    (`engine.store.settings`: a PostgreSQL URL, or none for SQLite); `store_path`: the SQLite
    file when `store` names no URL (None: the data directory's).
    `config`: one configuration for every session (tests); None reads each workspace's config as
    the CLI does, with its trust rules. `model`, `script`: as `trellis run --model/--script`.
    `clock`: event times. `gateway_factory` (tests): a fresh Gateway for each session.
    `secrets`: what the server holds beyond each configuration's secrets (the serve token, also
    when generated), redacted from every session's errors as API keys are.
    """

    roots: list[Path]
    store_path: Path | None = None
    store: StoreSettings = field(default_factory=StoreSettings)
    config: Any = None  # engine.config.Config | None
    model: str | None = None
    script: Path | None = None
    trust_project: bool = False
    clock: Callable[[], float] = time.time
    agent_name: str = "trellis"
    gateway_factory: Callable[[], Any] | None = field(default=None)
    secrets: tuple[str, ...] = ()


def agent_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trellis")
    except PackageNotFoundError:
        return "unknown"


class AcpServer:
    """Process-wide: the store and one Agent per session, shared by the connections."""

    def __init__(self, options: AcpOptions) -> None:
        self.options = options
        self.sessions = SessionTable(options, self._ask)
        self._connections: dict[str, AcpConnection] = {}
        self._closed = False

    async def open(self) -> None:
        """Open the store now, so a store that cannot be opened (a server away, a bad file)
        stops the command at its start instead of failing each request; raises `StoreError`
        (the server is closed then)."""
        try:
            await self.sessions.store()
        except BaseException:
            await self.aclose()
            raise

    def connect(self, send: Send, *, connection_id: str) -> AcpConnection:
        if self._closed:
            raise RuntimeError("the ACP server is closed")
        connection = AcpConnection(self, send, connection_id)
        self._connections[connection_id] = connection
        return connection

    def forget(self, connection: AcpConnection) -> None:
        if self._connections.get(connection.id) is connection:
            del self._connections[connection.id]

    async def aclose(self) -> None:
        """Close every connection (their turns end `cancelled`), then the agents and the store."""
        self._closed = True
        for connection in list(self._connections.values()):
            await connection.close()
        await self.sessions.aclose()

    async def _ask(self, session: AcpSession, question: PermissionQuestion) -> PermissionAnswer:
        connection = session.prompting
        if not isinstance(connection, AcpConnection):
            return PermissionAnswer.deny_once
        return await connection.ask_permission(session, question)

    async def workspace(self, cwd: str) -> Path:
        """The resolved `cwd` if it is an absolute directory under a configured root."""
        if not cwd or not Path(cwd).is_absolute():
            raise RequestError(
                -32602, f"Invalid params: cwd: must be an absolute path, got {cwd!r}"
            )
        roots = self.options.roots

        def resolve() -> tuple[Path, bool, bool]:
            path = Path(cwd).resolve()
            inside = any(path.is_relative_to(root.resolve()) for root in roots)
            return path, path.is_dir(), inside

        path, is_dir, inside = await asyncio.to_thread(resolve)
        if not inside:
            shown = ", ".join(str(root) for root in roots) or "none"
            raise RequestError(
                -32602, f"Invalid params: cwd: {cwd} is not under the served roots ({shown})"
            )
        if not is_dir:
            raise RequestError(-32602, f"Invalid params: cwd: {cwd} is not a directory")
        return path


Handler = Callable[[Any], Awaitable[Any]]


def _set_event() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


@dataclass(slots=True)
class _Opened:
    """A session this connection opened, and its feed (None for a read-only session that is not
    followed)."""

    session: AcpSession
    feed: Feed | None
    feed_from: int
    prompts: int = 0
    """This connection's `session/prompt`s for the session that arrived and are not answered."""
    quiet: asyncio.Event = field(default_factory=_set_event)
    """Set while `prompts` is 0."""
    cancelled: bool = False
    """A `session/cancel` came after them: a prompt that has not reached the Agent yet (its
    task not started, or the Agent still opening) does not run. Spent once they are answered."""


@dataclass(frozen=True, slots=True)
class _Answer:
    """A result and what follows it: notifications (e.g. `available_commands_update`) or, with
    `after`, what sends them once it is awaited."""

    result: Any
    then: tuple[tuple[str, Any], ...] = ()
    after: Callable[[], Awaitable[None]] | None = None


class AcpConnection:
    """One client. `receive` takes each incoming message; answers go out through `send`."""

    def __init__(self, server: AcpServer, send: Send, connection_id: str) -> None:
        self.server = server
        self.id = connection_id
        self._send = send
        self._send_now = send if isinstance(send, SendNow) else None
        self._send_lock = asyncio.Lock()
        self._writers = 0  # `_emit_all`s holding or waiting for the send lock
        self._initialized = False
        self._closed = False
        self.wants_events = False
        self.client_capabilities: ClientCapabilities | None = None
        """What the client offers (its `fs` and `terminal` are lent to the tools)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._opened: dict[str, _Opened] = {}
        self._next_request = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._requests: dict[str, Handler] = {
            "initialize": self._initialize,
            "session/new": self._new,
            "session/load": self._load,
            "session/resume": self._resume,
            "session/close": self._close,
            "session/list": self._list,
            "session/delete": self._delete,
            "session/prompt": self._prompt,
            "session/set_config_option": self._set_config_option,
            "_trellis/inject": self._inject,
            "_trellis/events": self._catch_up,
        }

    # --- input ---------------------------------------------------------------------------------

    async def receive(self, text: str) -> None:
        """One incoming message. Requests run in their own task; this returns at once."""
        if self._closed:
            return
        try:
            message = rpc.parse(text)
        except rpc.BadMessage as bad:
            log.info("connection %s: bad message: %s", self.id, bad.error)
            await self._write(rpc.error_message(bad.ident, bad.error))
            return
        if message.is_response:
            self._answered(message)
            return
        method = message.method
        assert method is not None
        if not message.has_id:
            self._notification(method, message.params)
            return
        if method == "initialize":  # answered before any later message is looked at
            await self._answer(message.id, method, message.params)
            return
        settled = self._prompt_arrived(message.params) if method == "session/prompt" else None
        task = asyncio.create_task(
            self._answer(message.id, method, message.params, settled),
            name=f"acp {self.id} {method}",
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _prompt_arrived(self, params: Any) -> Callable[[], None] | None:
        """Count a prompt in as it arrives, before its task runs, so a `session/cancel` read
        right behind it is for it (`_notification`). Returns what counts it out again, called
        before its answer is written: a client may send its next prompt the moment it reads it."""
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        opened = self._opened.get(session_id) if isinstance(session_id, str) else None
        if opened is None:
            return None  # not a session of this connection: refused, nothing to cancel
        opened.prompts += 1
        opened.quiet.clear()

        def answered() -> None:
            opened.prompts -= 1
            if opened.prompts == 0:
                opened.cancelled = False
                opened.quiet.set()

        return answered

    async def receive_error(self, error: RequestError) -> None:
        """A message the transport could not take (over the size limit): answered with `error`
        and id null, as an unreadable message is; the connection goes on."""
        log.info("connection %s: unread message: %s", self.id, error)
        await self._write(rpc.error_message(None, error))

    async def close(self) -> None:
        """The transport dropped: nothing more is sent; this connection's running prompts are
        cancelled (their turns end `cancelled` and are stored) and its sessions let go."""
        if self._closed:
            return
        self._closed = True
        for opened in self._opened.values():
            agent = opened.session.agent
            if opened.session.prompting is self and agent is not None:
                agent.cancel()
        for waiting in self._waiting.values():
            waiting.cancel()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for opened in list(self._opened.values()):
            await self._let_go(opened)
        self._opened.clear()
        self.server.forget(self)

    def _notification(self, method: str, params: Any) -> None:
        if method != "session/cancel" or not self._initialized:
            return  # unknown notifications are ignored, as JSON-RPC asks
        try:
            cancel = CancelNotification.model_validate(params)
        except ValidationError as error:
            log.info("connection %s: bad session/cancel: %s", self.id, error)
            return
        opened = self._opened.get(cancel.session_id)
        if opened is not None:
            self._cancel(opened)

    def _cancel(self, opened: _Opened) -> None:
        """End this connection's prompts to the session that came before now."""
        if not opened.prompts:
            return  # none to cancel
        opened.cancelled = True  # one not at the Agent yet will not run
        agent = opened.session.agent
        if agent is not None and opened.session.prompting is self:
            agent.cancel()  # the one sent ends `cancelled` (even before its first step)

    def _answered(self, message: rpc.Incoming) -> None:
        if not isinstance(message.id, int):
            return
        waiting = self._waiting.pop(message.id, None)
        if waiting is None or waiting.done():
            return
        if message.error is not None:
            code = message.error.get("code")
            text = message.error.get("message")
            waiting.set_exception(
                RequestError(code if isinstance(code, int) else -32603, str(text or "error"))
            )
        else:
            waiting.set_result(message.result)

    # --- requests ------------------------------------------------------------------------------

    async def _answer(
        self,
        ident: rpc.RequestId,
        method: str,
        params: Any,
        settled: Callable[[], None] | None = None,
    ) -> None:
        """Run the request's handler and write its answer; `settled` is called once the handler
        is done, whatever its outcome, and before anything is written."""
        then: tuple[tuple[str, Any], ...] = ()
        after: Callable[[], Awaitable[None]] | None = None
        try:
            try:
                handler = self._requests.get(method)
                if handler is None or (method.startswith("_trellis/") and not self.wants_events):
                    raise RequestError(-32601, f"Method not found: {method}", {"method": method})
                if not self._initialized and method != "initialize":
                    raise RequestError(
                        rpc.NOT_INITIALIZED, f"{method} before initialize: send initialize first"
                    )
                result = await handler(params if params is not None else {})
            finally:
                if settled is not None:
                    settled()
            if isinstance(result, _Answer):
                result, then, after = result.result, result.then, result.after
            body = rpc.dump(result) if isinstance(result, BaseModel) else result
            await self._write(rpc.result_message(ident, body if body is not None else {}))
        except RequestError as error:
            await self._write(rpc.error_message(ident, error))
        except ValidationError as error:
            await self._write(rpc.error_message(ident, rpc.invalid_params(error)))
        except UnknownSessionError as error:
            await self._write(
                rpc.error_message(ident, RequestError(rpc.UNKNOWN_SESSION, str(error)))
            )
        except TrellisError as error:
            await self._write(rpc.error_message(ident, RequestError(rpc.REFUSED, str(error))))
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.exception("connection %s: %s failed", self.id, method)
            internal = RequestError(-32603, f"Internal error: {type(error).__name__}: {error}")
            await self._write(rpc.error_message(ident, internal))
        for note_method, note_params in then:
            await self._notify(note_method, note_params)
        if after is not None:
            await after()

    async def _initialize(self, params: Any) -> InitializeResponse:
        request = InitializeRequest.model_validate(params)
        self.client_capabilities = request.client_capabilities
        meta = request.client_capabilities.field_meta if request.client_capabilities else None
        self.wants_events = bool(meta and meta.get(EVENTS_META_KEY) is True)
        self._initialized = True
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
                name=self.server.options.agent_name, title="Trellis", version=agent_version()
            ),
            auth_methods=[],
        )

    async def _new(self, params: Any) -> _Answer:
        request = NewSessionRequest.model_validate(params)
        cwd = await self.server.workspace(request.cwd)
        session = await self.server.sessions.new(cwd, request.mcp_servers, self.id)
        self._attach(session, AcpProjection(session.workspace))
        return _Answer(
            NewSessionResponse(session_id=session.id, config_options=_model_options(session.agent)),
            then=self._opening_notes(session),
        )

    async def _load(self, params: Any) -> _Answer:
        request = LoadSessionRequest.model_validate(params)
        session = await self._stored(request.session_id, request.cwd, request.mcp_servers)
        # the whole conversation, in log order, through the translator live prompts use; then
        # the live feed goes on from the first event not replayed, with the same translator state
        projection = AcpProjection(session.workspace)
        until = session.next_seq
        try:
            await self._replay(session, projection, until)
        except BaseException:
            await self.server.sessions.release(session, self.id)
            raise
        self._attach(session, projection, from_seq=until)
        meta = {"trellis/readOnly": session.read_only} if session.read_only else None
        return _Answer(LoadSessionResponse(field_meta=meta), after=self._once_open(session))

    async def _resume(self, params: Any) -> _Answer:
        """`session/load` without the replay: the client shows the conversation already, and the
        feed goes on from the log's end."""
        request = ResumeSessionRequest.model_validate(params)
        session = await self._stored(request.session_id, request.cwd, request.mcp_servers or [])
        self._attach(session, AcpProjection(session.workspace))
        meta = {"trellis/readOnly": session.read_only} if session.read_only else None
        return _Answer(ResumeSessionResponse(field_meta=meta), after=self._once_open(session))

    async def _stored(
        self, session_id: str, cwd_text: str, servers: Sequence[ClientMcpServer]
    ) -> AcpSession:
        """A stored session held for this connection (load and resume): its cwd must be the one
        the client names, under the served roots. Opened again, its old feed stops."""
        cwd = await self.server.workspace(cwd_text)
        store = await self.server.sessions.store()
        info = await store.info(session_id)
        if info.cwd != storable_os_text(str(cwd)):
            raise RequestError(
                -32602,
                f"Invalid params: cwd: session {info.id} belongs to {info.cwd}, not {cwd_text}",
            )
        previous = self._opened.pop(info.id, None)
        if previous is not None and previous.feed is not None:  # opened again: followed again,
            await previous.feed.stop()  # the session stays held (a prompt of ours may run)
        return await self.server.sessions.load(info.id, servers, self.id)

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
                await self._notify(method, note)

        return once_open

    async def _close(self, params: Any) -> CloseSessionResponse:
        """As `session/cancel`, then let the session go: its feed stops, and its Agent is
        disposed when no other connection holds it. Another request for it is -32002 until
        it is loaded or resumed again."""
        request = CloseSessionRequest.model_validate(params)
        opened = self._opened.pop(request.session_id, None)
        if opened is None:
            raise RequestError(
                rpc.UNKNOWN_SESSION,
                f"unknown session {request.session_id!r} on this connection",
                {"sessionId": request.session_id},
            )
        self._cancel(opened)
        await opened.quiet.wait()  # its prompts answered (`cancelled`, or as they ended)
        await self._let_go(opened)
        return CloseSessionResponse()

    async def _delete(self, params: Any) -> DeleteSessionResponse:
        """A stored session under the served roots, deleted; refused while it is open (here,
        by any connection, or by another process's writer)."""
        request = DeleteSessionRequest.model_validate(params)
        store = await self.server.sessions.store()
        info = await store.info(request.session_id)
        if not _under(info.cwd, self._served_roots()):
            raise UnknownSessionError(info.id)
        if self.server.sessions.get(info.id) is not None:
            raise RequestError(
                rpc.SESSION_BUSY,
                f"session {info.id} is open; close it (session/close) before deleting it",
            )
        await store.delete(info.id)
        return DeleteSessionResponse()

    def _served_roots(self) -> list[str]:
        """The served roots as a stored session's cwd is written: resolved."""
        return [str(root.resolve()) for root in self.server.options.roots]

    async def _replay(self, session: AcpSession, projection: AcpProjection, until: int) -> None:
        """The log before `until` as `session/load` sends it, a range of `READ_CHUNK` events at a
        time: read, translated, written, and then the loop is given back, so a long session
        neither sits in memory whole nor stalls pings and other connections while it goes out.
        The next range is read (on the store's thread) while one is translated and written."""

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
                    frames = self._encoded(encoder, projection.replay(chunk))
                    if self._ready_now():  # no coroutine per frame: a range is thousands
                        self._write_encoded(frames)
                    else:
                        await self._emit_all([frame.decode() for frame in frames])
                    await asyncio.sleep(0)
        finally:
            if reading is not None:
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)

    async def _list(self, params: Any) -> ListSessionsResponse:
        request = ListSessionsRequest.model_validate(params)
        cwd = None
        if request.cwd is not None:
            cwd = storable_os_text(str(await self.server.workspace(request.cwd)))
        store = await self.server.sessions.store()
        try:
            page = await store.list(cwd=cwd, limit=LIST_PAGE, cursor=request.cursor)
        except ValueError as error:
            raise RequestError(-32602, f"Invalid params: cursor: {error}") from None
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

    async def _prompt(self, params: Any) -> PromptResponse:
        request = PromptRequest.model_validate(params)
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
        session.prompting = self
        try:
            if prompt.attachments:  # the files its links name, read while the session is held
                workspace = Path(session.workspace)
                prompt = await asyncio.to_thread(read_linked_files, prompt, workspace)
            agent = await self._agent(opened)
            if opened.cancelled:  # cancelled before it reached the Agent: nothing ran
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
            if session.prompting is self:
                session.prompting = None
        from engine.agent.send import Blocked, Dropped

        if isinstance(outcome, Blocked):
            await self._say(session.id, f"The prompt was blocked: {outcome.reason}")
            return PromptResponse(stop_reason="refusal")
        if isinstance(outcome, Dropped):
            raise RequestError(rpc.TURN_FAILED, f"the prompt did not run: {outcome.reason}")
        return _stop(outcome.reason, outcome.message)

    async def _command(self, opened: _Opened, line: str, start: int) -> PromptResponse:
        """A slash command from the engine's registry; its text goes to the client as a message.
        A command that runs a turn (`/subtask`) answers with that turn's stop reason."""
        agent = opened.session.agent
        assert agent is not None
        result = await REGISTRY.run(agent, line)
        await agent.when_idle()
        await self._caught_up(opened)
        await self._say(opened.session.id, result.text)
        ends = [e.data for e in await agent.read_log(start) if isinstance(e.data, TurnEnd)]
        return (
            _stop(ends[-1].reason, ends[-1].message)
            if ends
            else PromptResponse(stop_reason="end_turn")
        )

    async def _set_config_option(self, params: Any) -> SetSessionConfigOptionResponse:
        request = SetSessionConfigOptionSelectRequest.model_validate(params)
        agent = await self._agent(self._open_session(request.session_id))
        if request.config_id != "model":
            raise RequestError(
                -32602, f"Invalid params: configId: unknown option {request.config_id!r} (model)"
            )
        if request.value not in agent.model_names():
            known = ", ".join(agent.model_names())
            raise RequestError(
                -32602, f"Invalid params: value: no model {request.value!r} (configured: {known})"
            )
        agent.request_model(request.value)
        return SetSessionConfigOptionResponse(config_options=_model_options(agent))

    async def _inject(self, params: Any) -> dict[str, Any]:
        """`_trellis/inject {sessionId, content, source?}`: context, never the user's words."""
        session_id, content = params.get("sessionId"), params.get("content")
        source = params.get("source", "client")
        for name, value in (("sessionId", session_id), ("content", content), ("source", source)):
            if not isinstance(value, str) or not value:
                raise RequestError(
                    -32602, f"Invalid params: {name}: a non-empty string is required"
                )
        agent = await self._agent(self._open_session(session_id))
        kind, _, name = source.partition(":")
        try:
            agent.inject(AdditionalContext(content, source=Source(kind, name)))
        except ValueError as error:
            raise RequestError(-32602, f"Invalid params: source: {error}") from None
        return {}

    async def _catch_up(self, params: Any) -> dict[str, Any]:
        """`_trellis/events {sessionId, fromSeq}`: the stored events from `fromSeq` up to where
        the live `_trellis/event`s began, so an opted-in client has the whole log."""
        session_id, from_seq = params.get("sessionId"), params.get("fromSeq", 0)
        if not isinstance(session_id, str):
            raise RequestError(-32602, "Invalid params: sessionId: a string is required")
        if not isinstance(from_seq, int) or isinstance(from_seq, bool) or from_seq < 0:
            raise RequestError(-32602, "Invalid params: fromSeq: a seq (0 or more) is required")
        opened = self._open_session(session_id)
        for event in await opened.session.read(from_seq, opened.feed_from):
            await self._notify("_trellis/event", event_params(session_id, event))
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
                self._deliver,
                from_seq=start,
                engine_events=self.wants_events,
                deliver_now=DeliverNow(self._ready_now, self._deliver_now)
                if self._send_now is not None
                else None,
            )
        self._opened[session.id] = _Opened(session, feed, start)

    async def _let_go(self, opened: _Opened) -> None:
        if opened.feed is not None:
            await opened.feed.stop()
        await self.server.sessions.release(opened.session, self.id)

    async def _caught_up(self, opened: _Opened) -> None:
        if opened.feed is not None and opened.session.agent is not None:
            await opened.feed.caught_up(len(opened.session.agent.log) - 1)

    def _opening_notes(self, session: AcpSession) -> tuple[tuple[str, Any], ...]:
        """After `session/new` / `session/load` answers: the commands, the model option, and a
        line for each client MCP server that did not start."""
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
        for failure in session.servers.failures:
            notes.append(_message(f"[trellis] {failure}\n"))
        return tuple(("session/update", update_params(session.id, note)) for note in notes)

    async def _say(self, session_id: str, text: str) -> None:
        if text:
            await self._notify("session/update", update_params(session_id, _message(text)))

    # --- asking the client ---------------------------------------------------------------------

    async def ask_permission(
        self, session: AcpSession, question: PermissionQuestion
    ) -> PermissionAnswer:
        """`session/request_permission` for a call of the prompt this connection runs; sent
        after the call's own `tool_call` update. Cancelling it (a cancelled turn) withdraws it:
        a client that never answers does not hold the turn."""
        request = permission_request(session.id, question, session.workspace)
        params = rpc.dump(request)
        result = await self.request("session/request_permission", params, session_id=session.id)
        return answer_of(result)

    async def request(self, method: str, params: Any, *, session_id: str | None = None) -> Any:
        """Ask the client and wait for its result: `RequestError` for an error answer,
        `ConnectionError` when the client is gone. With `session_id`, the session's updates so
        far go out first, so the client has a tool call before a request made for it."""
        opened = self._opened.get(session_id) if session_id is not None else None
        if opened is not None:
            await self._caught_up(opened)
        if self._closed:
            raise ConnectionError("the client is gone")
        ident = self._next_request
        self._next_request += 1
        waiting: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = waiting
        try:
            await self._write(rpc.request(ident, method, params))
            return await waiting
        finally:
            self._waiting.pop(ident, None)

    # --- output --------------------------------------------------------------------------------

    async def _notify(self, method: str, params: Any) -> None:
        await self._write(rpc.notification(method, params))

    async def _deliver(self, messages: list[dict[str, Any]]) -> None:
        """Send `messages` in order, none of another writer's between them."""
        if not self._closed:
            await self._emit_all([self._frame(message) for message in messages])

    def _ready_now(self) -> bool:
        """Whether messages can be written at once: the transport can take them without
        waiting, and no other writer holds or waits for the send lock (they go first)."""
        now = self._send_now
        return now is not None and not self._closed and not self._writers and now.ready()

    def _deliver_now(self, messages: list[dict[str, Any]]) -> None:
        """Write `messages` at once, in order (after `_ready_now`), as `_deliver` would."""
        self._write_now([self._frame(message) for message in messages])

    def _write_now(self, frames: list[str | None]) -> None:
        """Write `frames` at once, in order (after `_ready_now`), as `_emit_all` would."""
        now = self._send_now
        assert now is not None
        for text in self._while_open(frames):
            try:
                now.write(text)
            except Exception:
                self._refused()

    def _write_encoded(self, frames: list[bytes]) -> None:
        """Write encoded `frames` at once, in order (after `_ready_now`)."""
        now = self._send_now
        assert now is not None
        try:
            now.write_encoded(frames)
        except Exception:
            self._refused()

    def _encoded(self, encoder: rpc.UpdateEncoder, updates: Iterable[AcpUpdate]) -> list[bytes]:
        """`updates` as encoded `session/update` messages; one over the size limit (which the
        translator keeps below) is logged and not sent, as `_frame` does."""
        frames = encoder.encode(updates)
        if frames and max(map(len, frames)) > rpc.MAX_OUTGOING_BYTES:
            for frame in frames:
                if len(frame) > rpc.MAX_OUTGOING_BYTES:
                    log.error(
                        "connection %s: a %d-byte session/update was not sent", self.id, len(frame)
                    )
            frames = [frame for frame in frames if len(frame) <= rpc.MAX_OUTGOING_BYTES]
        return frames

    async def _write(self, message: dict[str, Any]) -> None:
        """Send one message, in order with every other."""
        if not self._closed:
            await self._emit_all([self._frame(message)])

    def _frame(self, message: dict[str, Any]) -> str | None:
        """`message` serialized. One over the size limit is never sent: an answer becomes an
        error answer saying so, an engine event a stub naming it, anything else None."""
        text, size = rpc.serialize(message)
        if size <= rpc.MAX_OUTGOING_BYTES:
            return text
        log.error("connection %s: a %d-byte %s was not sent", self.id, size, _what(message))
        replacement = _too_big(message, size)
        return None if replacement is None else rpc.serialize(replacement)[0]

    async def _emit_all(self, frames: list[str | None]) -> None:
        """Write `frames` in order, none of another writer's between them."""
        self._writers += 1
        try:
            async with self._send_lock:
                for text in self._while_open(frames):
                    try:
                        await self._send(text)
                    except Exception:
                        self._refused()
        finally:
            self._writers -= 1

    def _while_open(self, frames: list[str | None]) -> Iterator[str]:
        """The frames to write, until the connection closes (None: not sent)."""
        for text in frames:
            if self._closed:
                return
            if text is not None:
                yield text

    def _refused(self) -> None:
        log.info("connection %s: the transport refused a message; closing", self.id)
        self._closed = True


def _stop(reason: Any, message: str) -> PromptResponse:
    stop = STOP_REASONS.get(reason)
    if stop is None:  # error, budget: the message says what went wrong
        raise RequestError(rpc.TURN_FAILED, f"the turn ended with {reason}: {message}".rstrip(": "))
    return PromptResponse(stop_reason=stop)


def _message(text: str) -> AgentMessageChunk:
    return AgentMessageChunk(
        session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text)
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
        )
    ]


def _under(cwd: str, roots: Sequence[str]) -> bool:
    """Whether a stored session's cwd lies under one of `roots` (resolved, as stored)."""
    return any(cwd == root or cwd.startswith(root.rstrip("/") + "/") for root in roots)


def _what(message: dict[str, Any]) -> str:
    return str(message.get("method") or "answer")


def _too_big(message: dict[str, Any], size: int) -> dict[str, Any] | None:
    if message.get("method") == "_trellis/event":
        params = message["params"]
        event = {k: v for k, v in params["event"].items() if k != "data"}
        event["omitted"] = f"the event is {size} bytes, over the 1 MiB limit; read it from the log"
        return rpc.notification(
            "_trellis/event", {"sessionId": params["sessionId"], "event": event}
        )
    if "id" in message and "method" not in message:
        error = RequestError(
            -32603, f"Internal error: the answer would be {size} bytes, over the 1 MiB limit"
        )
        return rpc.error_message(message["id"], error)
    return None
