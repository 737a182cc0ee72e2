"""The session operations a client asks for, against the session table and the Agent: one
`SessionHandlers` per connection, holding the sessions that connection opened.

`METHODS` names each request a connection answers and the schema model its params must fit
(`app.acp.protocol` checks them); `SessionHandlers.handle` runs one and returns its result (or an
`Answer` with what follows it), raising what `AcpProtocol.send_error` turns into an error answer.
The handlers are two groups on one table of opened sessions (`app.acp.opened_sessions`): a
session's life, load and replay included (`app.acp.lifecycle`), and the prompt path
(`app.acp.prompting`). What they send goes through the connection (`app.acp.connection`), which
owns the waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from acp.meta import PROTOCOL_VERSION
from acp.schema import (
    AgentCapabilities,
    CloseSessionRequest,
    ConfigOptionUpdate,
    DeleteSessionRequest,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    LoadSessionRequest,
    McpCapabilities,
    NewSessionRequest,
    PromptCapabilities,
    PromptRequest,
    ResumeSessionRequest,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionSelectRequest,
    SetSessionModeRequest,
)

from app.acp.feed import update_params
from app.acp.lifecycle import LifecycleHandlers
from app.acp.opened_sessions import OpenedSessions
from app.acp.prompting import PromptHandlers
from app.acp.protocol import Methods, Notification, Request

if TYPE_CHECKING:
    from app.acp.connection import AcpConnection

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


Handler = Callable[[Any], Awaitable[Any]]


class SessionHandlers:
    """The request handlers of one connection, and the sessions it opened."""

    def __init__(self, connection: AcpConnection) -> None:
        self._server = connection.server
        self._connection = connection
        self._telling: set[asyncio.Task[None]] = set()
        self._opened = OpenedSessions(connection)
        self._lifecycle = LifecycleHandlers(connection, self._opened)
        self._prompting = PromptHandlers(connection, self._opened)
        lifecycle, prompting = self._lifecycle, self._prompting
        self._handlers: dict[str, Handler] = {
            "initialize": self._initialize,
            "session/new": lifecycle.new,
            "session/load": lifecycle.load,
            "session/resume": lifecycle.resume,
            "session/close": lifecycle.close,
            "session/list": lifecycle.list_sessions,
            "session/delete": lifecycle.delete,
            "session/prompt": prompting.prompt,
            "session/set_config_option": prompting.set_config_option,
            "session/set_mode": prompting.set_mode,
            "_trellis/inject": prompting.inject,
            "_trellis/events": lifecycle.catch_up,
        }

    async def handle(self, request: Request) -> Any:
        """Run `request` (a method of `METHODS`, its params checked): its result, a schema model
        or an `Answer`; raises what becomes its error answer."""
        return await self._handlers[request.method](request.params)

    def notified(self, notification: Notification) -> None:
        """`session/cancel`: end this connection's prompts to the session that came before now
        (the protocol has marked them, so one not at the Agent yet does not run)."""
        self._prompting.notified(notification)

    def cancel_prompt(self, session_id: str) -> None:
        """The turn this connection's prompt runs in the session ends `cancelled`."""
        self._prompting.cancel_prompt(session_id)

    def cancel_prompts(self) -> None:
        """The connection is closing: the turns of its prompts end `cancelled`."""
        self._prompting.cancel_prompts()

    async def let_go_all(self) -> None:
        """The connection is closed: every session it opened is let go."""
        for task in list(self._telling):
            task.cancel()
        await self._opened.let_go_all()

    def tell_options(self, session_id: str, options: list[Any]) -> None:
        """`options_changed` for a command another connection ran: in a task of this connection
        (stopped when it closes), so a client slow to read never holds back that command's
        answer."""
        task = asyncio.create_task(self.options_changed(session_id, options))
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    async def options_changed(self, session_id: str, options: list[Any]) -> None:
        """A command changed the session's options (the model, the mode: a `/rewind` of the
        conversation, `/model NAME`): this client gets them as they are now, after what its feed
        sends of the log so far (nothing for a session not open here)."""
        opened = self._opened.get(session_id)
        if opened is None:
            return
        await self._opened.caught_up(opened)
        update = ConfigOptionUpdate(session_update="config_option_update", config_options=options)
        await self._connection.notify("session/update", update_params(session_id, update))

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
            await self._opened.caught_up(opened)

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
