"""The sessions one connection opened, each with its feed: what the lifecycle handlers
(`app.acp.lifecycle`) add and remove and the prompt handlers (`app.acp.prompting`) act on."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import uuid4

from acp.exceptions import RequestError
from acp.schema import AgentMessageChunk, TextContentBlock

from app.acp import rpc
from app.acp.feed import Feed, update_params
from app.acp.sessions import AcpSession
from engine.agent import Agent
from engine.tools.tool import DEFAULT_SECRET_PATTERNS
from replay.acp import AcpProjection

if TYPE_CHECKING:
    from app.acp.connection import AcpConnection


@dataclass(slots=True)
class Opened:
    """A session this connection opened, and its feed (None for a read-only session that is not
    followed)."""

    session: AcpSession
    feed: Feed | None
    feed_from: int


class OpenedSessions:
    """The sessions one connection opened, by id."""

    def __init__(self, connection: AcpConnection) -> None:
        self._connection = connection
        self._server = connection.server
        self._opened: dict[str, Opened] = {}

    def __iter__(self) -> Iterator[Opened]:
        return iter(list(self._opened.values()))

    def get(self, session_id: str) -> Opened | None:
        return self._opened.get(session_id)

    def pop(self, session_id: str) -> Opened | None:
        return self._opened.pop(session_id, None)

    def require(self, session_id: str) -> Opened:
        """The session, open on this connection; -32002 otherwise."""
        opened = self._opened.get(session_id)
        if opened is None:
            raise RequestError(
                rpc.UNKNOWN_SESSION,
                f"unknown session {session_id!r} on this connection: "
                "open it with session/new or session/load first",
                {"sessionId": session_id},
            )
        return opened

    async def agent(self, opened: Opened) -> Agent:
        """The session's Agent, once open; -32011 for a read-only session, -32014 (the engine
        refused) when it could not be opened."""
        agent = await opened.session.ready()
        if agent is None:
            raise RequestError(rpc.SESSION_READ_ONLY, opened.session.read_only)
        return agent

    def attach(
        self, session: AcpSession, projection: AcpProjection, *, from_seq: int | None = None
    ) -> None:
        """The session joins this connection, followed by a feed from `from_seq` (the log's end
        by default) through `projection`, unless it is read-only and not followed."""
        connection = self._connection
        start = session.next_seq if from_seq is None else from_seq
        feed = None
        if session.live:
            if session.replica is not None:  # followed: every event comes from the store, the
                projection.replaying = True  # words of the other process's client included
            feed = Feed(
                session.id,
                session.events,
                projection,
                connection.deliver,
                from_seq=start,
                engine_events=connection.protocol.wants_events,
                deliver_now=connection.deliver_now(),
                secret_patterns=lambda: _secret_patterns(session),
            )
        self._opened[session.id] = Opened(session, feed, start)

    async def let_go(self, opened: Opened) -> None:
        """Its feed stops and the session table lets this connection's hold go."""
        if opened.feed is not None:
            await opened.feed.aclose()
        await self._server.sessions.release(opened.session, self._connection.id)

    async def let_go_all(self) -> None:
        """The connection is closed: every session it opened is let go."""
        for opened in self:
            await self.let_go(opened)
        self._opened.clear()

    async def caught_up(self, opened: Opened) -> None:
        """Wait until the feed has sent the session's log so far."""
        if opened.feed is not None and opened.session.agent is not None:
            await opened.feed.caught_up(len(opened.session.agent.log) - 1)

    def cancel_agent(self, opened: Opened) -> None:
        """The turn this connection's prompt runs in the session ends `cancelled`."""
        agent = opened.session.agent
        if agent is not None and opened.session.prompting is self._connection:
            agent.cancel()  # the one sent ends `cancelled` (even before its first step)

    async def say(self, session_id: str, text: str) -> None:
        """`text` to the client as a note of Trellis's own (nothing for no text)."""
        if text:
            await self._connection.notify("session/update", update_params(session_id, note(text)))


def note(text: str) -> AgentMessageChunk:
    """A note of Trellis's own (a command's output, an opening failure): a message by itself."""
    return AgentMessageChunk(
        session_update="agent_message_chunk",
        content=TextContentBlock(type="text", text=text),
        message_id=f"trellis-{uuid4().hex}",
    )


def _secret_patterns(session: AcpSession) -> tuple[str, ...]:
    agent = session.agent
    return agent.secret_patterns if agent is not None else DEFAULT_SECRET_PATTERNS
