"""A session's life on a connection: `session/new`, `session/load` (with the replay of its log),
`session/resume`, `session/close`, `session/delete`, `session/list`, the notes that follow an
opening, and `_trellis/events` (the stored events before the live ones)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from acp.exceptions import RequestError
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    CloseSessionRequest,
    CloseSessionResponse,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    DeleteSessionRequest,
    DeleteSessionResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionInfo,
    UnstructuredCommandInput,
)

from app.acp import modes, rpc
from app.acp.feed import SessionUpdate, event_params, update_params
from app.acp.mcp import ClientMcpServer
from app.acp.opened_sessions import OpenedSessions, note
from app.acp.opening import SessionOpenError
from app.acp.prompting import config_options
from app.acp.sessions import AcpSession
from engine.commands import REGISTRY
from engine.events import Event
from engine.gc_policy import gc_paused
from engine.os_text import storable_os_text
from engine.session import READ_CHUNK
from engine.store.errors import StoreError, UnknownSessionError
from replay.acp import AcpProjection

if TYPE_CHECKING:
    from app.acp.connection import AcpConnection

LIST_PAGE = 50
"""Sessions per `session/list` page."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A result and what follows it: notifications (e.g. `available_commands_update`) or, with
    `after`, what sends them once it is awaited."""

    result: Any
    then: tuple[tuple[str, Any], ...] = ()
    after: Callable[[], Awaitable[None]] | None = None


class LifecycleHandlers:
    """Opening, replaying, closing and listing sessions for one connection."""

    def __init__(self, connection: AcpConnection, opened: OpenedSessions) -> None:
        self._connection = connection
        self._server = connection.server
        self._protocol = connection.protocol
        self._opened = opened

    async def new(self, request: NewSessionRequest) -> Answer:
        """A new session in the client's cwd, followed from its start; the opening notes
        follow the answer."""
        cwd = await self._server.workspace(request.cwd)
        session = await self._server.sessions.new(cwd, request.mcp_servers, self._connection.id)
        self._opened.attach(session, AcpProjection(session.workspace))
        return Answer(
            NewSessionResponse(
                session_id=session.id,
                config_options=config_options(session.agent),
                modes=modes.mode_state(modes.current_mode(session.agent)),
            ),
            then=self._opening_notes(session),
        )

    async def load(self, request: LoadSessionRequest) -> Answer:
        """A stored session, its whole log replayed before the answer; its Agent opens after
        it (`app.acp.opening`)."""
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
        self._opened.attach(session, projection, from_seq=until)
        meta = {"trellis/readOnly": session.read_only} if session.read_only else None
        mode = modes.mode_state(modes.current_mode(session.agent, projection.mode))
        return Answer(
            LoadSessionResponse(field_meta=meta, modes=mode), after=self._once_open(session)
        )

    async def resume(self, request: ResumeSessionRequest) -> Answer:
        """`session/load` without the replay: the client shows the conversation already, and the
        feed goes on from the log's end."""
        session = await self._stored(request.session_id, request.cwd, request.mcp_servers or [])
        self._opened.attach(session, AcpProjection(session.workspace))
        meta = {"trellis/readOnly": session.read_only} if session.read_only else None
        # The answer names the session's mode, which its Agent knows once open (a resume
        # replays no log here to read it from); a failed opening is said after the answer.
        agent = session.agent
        if agent is None and session.opening is not None:
            with suppress(SessionOpenError):
                agent = await session.ready()
        mode = modes.mode_state(modes.current_mode(agent))
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
        previous = self._opened.pop(info.id)
        if previous is not None and previous.feed is not None:  # opened again: followed again,
            await previous.feed.aclose()  # the session stays held (a prompt of ours may run)
        return await self._server.sessions.load(info.id, servers, self._connection.id)

    def _once_open(self, session: AcpSession) -> Callable[[], Awaitable[None]]:
        async def once_open() -> None:
            """After the answer: the Agent opens (app.acp.opening), then the opening notes, or
            the reason it could not open."""
            try:
                await session.ready()
            except SessionOpenError as failed:
                await self._opened.say(session.id, f"[trellis] {failed}\n")
                return
            for method, opening_note in self._opening_notes(session):
                await self._connection.notify(method, opening_note)

        return once_open

    async def close(self, request: CloseSessionRequest) -> CloseSessionResponse:
        """As `session/cancel`, then let the session go: its feed stops, and its Agent is
        disposed when no other connection holds it. Another request for it is -32002 until
        it is loaded or resumed again."""
        opened = self._opened.pop(request.session_id)
        if opened is None:
            raise RequestError(
                rpc.UNKNOWN_SESSION,
                f"unknown session {request.session_id!r} on this connection",
                {"sessionId": request.session_id},
            )
        if self._protocol.cancel_prompts(opened.session.id):
            self._opened.cancel_agent(opened)
        await self._connection.prompts_answered(opened.session.id)  # `cancelled`, or as they ended
        await self._opened.let_go(opened)
        return CloseSessionResponse()

    async def delete(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
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
            # bulk work that makes no cycles (engine/gc_policy.py); paused for the whole
            # replay, since each re-enabling walked what the ranges had left
            with gc_paused():
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

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        """The stored sessions under the served roots (in the client's cwd, when it names one),
        a page of `LIST_PAGE` at a time."""
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

    async def catch_up(self, params: Any) -> dict[str, Any]:
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
        opened = self._opened.require(session_id)
        for event in await opened.session.read(from_seq, opened.feed_from):
            await self._connection.notify("_trellis/event", event_params(session_id, event))
        return {"nextSeq": opened.feed_from}

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
        options = config_options(session.agent)
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
            notes.append(note(f"[trellis] {failure}\n"))
        return tuple(("session/update", update_params(session.id, each)) for each in notes)


def _under(cwd: str, roots: Sequence[str]) -> bool:
    """Whether a stored session's cwd lies under one of `roots` (resolved, as stored)."""
    return any(cwd == root or cwd.startswith(root.rstrip("/") + "/") for root in roots)
