"""The ACP server's sessions: one Agent per session per process, shared by every connection that
opened it, built the way `trellis run` builds one (`open_agent`, the workspace's config with its
trust rules, a resumed session's own workspace config).

A session another process holds for writing (its lease) is opened read-only from the stored log:
it can be replayed, and a prompt gets a clear error. An Agent is disposed when the last connection
holding it lets go, which gives its writer lease back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.acp.client_tools import lent_by
from app.acp.mcp import ClientMcpServer, ClientServers, start_client_servers
from engine.agent import Agent, open_agent
from engine.agent.session_config import load_session_config
from engine.config import Config, load_config_report
from engine.events import Event
from engine.os_text import storable_os_text, stored_os_path
from engine.store.errors import LeaseError
from engine.store.sqlite import SQLiteStore
from engine.tools import default_registry
from engine.tools.permission import PermissionAnswer, PermissionQuestion

if TYPE_CHECKING:
    from app.acp.core import AcpOptions

log = logging.getLogger(__name__)

Asker = Callable[["AcpSession", PermissionQuestion], Awaitable[PermissionAnswer]]
"""Asks the connection whose prompt runs (`AcpSession.prompting`) for permission."""


@dataclass(eq=False)
class AcpSession:
    id: str
    workspace: str
    """The session's stored working directory (escaped as `engine.os_text` stores it)."""
    agent: Agent | None
    """None when the session is read-only."""
    stored_log: tuple[Event, ...] = ()
    read_only: str = ""
    """Why prompts are refused (another process holds the session for writing); "" if writable."""
    servers: ClientServers = field(default_factory=ClientServers)
    holders: set[str] = field(default_factory=set)
    prompting: Any = None
    """The `AcpConnection` whose prompt runs now; it answers permission questions."""

    @property
    def log(self) -> Sequence[Event]:
        """The events held in memory; `len` is the next seq. A resumed Agent holds only its tail:
        read older events with `read`."""
        return self.agent.log if self.agent is not None else self.stored_log

    async def read(self, start: int, end: int) -> Sequence[Event]:
        """The durable events with `start <= seq < end`, from the store where not held."""
        if self.agent is not None:
            return await self.agent.read_log(start, end)
        return self.stored_log[start:end]


class SessionTable:
    """The process's open sessions and the store they live in."""

    def __init__(self, options: AcpOptions, ask: Asker) -> None:
        self._options = options
        self._ask = ask
        self._store: SQLiteStore | None = None
        self._store_lock = asyncio.Lock()
        self._sessions: dict[str, AcpSession] = {}
        self._opening: dict[str, asyncio.Future[AcpSession]] = {}

    async def store(self) -> SQLiteStore:
        async with self._store_lock:
            if self._store is None:
                store = SQLiteStore(self._options.store_path, clock=self._options.clock)
                await store.open()
                self._store = store
            return self._store

    def get(self, session_id: str) -> AcpSession | None:
        return self._sessions.get(session_id)

    async def new(self, cwd: Path, servers: Sequence[ClientMcpServer], holder: str) -> AcpSession:
        store = await self.store()
        config = await self._config_for(cwd)
        started = await start_client_servers(servers)
        session = AcpSession(id="", workspace=storable_os_text(str(cwd)), agent=None)
        session.servers = started
        try:
            agent = await open_agent(
                config=config,
                cwd=cwd,
                store=store,
                model=self._options.model,
                script=self._options.script,
                gateway=self._gateway(),
                responder=self._responder(session),
                front_end=lambda: lent_by(session.prompting, session.id),
                tools=started.register_into(default_registry()),
                clock=self._options.clock,
            )
        except BaseException:
            await started.aclose()
            raise
        session.id, session.agent = agent.session_id, agent
        session.holders.add(holder)
        self._sessions[session.id] = session
        return session

    async def load(
        self, session_id: str, servers: Sequence[ClientMcpServer], holder: str
    ) -> AcpSession:
        """The open session, or the stored one opened (read-only if another process writes it).
        Two connections loading one session at once share the one opening."""
        opened = self._sessions.get(session_id)
        if opened is None and session_id in self._opening:
            opened = await asyncio.shield(self._opening[session_id])
        if opened is None:
            opening = asyncio.get_running_loop().create_future()
            self._opening[session_id] = opening
            try:
                opened = await self._open_stored(session_id, servers)
            except BaseException as error:
                opening.set_exception(error)
                opening.exception()  # retrieved: a lone opener is not a leak
                raise
            finally:
                del self._opening[session_id]
            opening.set_result(opened)
            self._sessions[session_id] = opened
        opened.holders.add(holder)
        return opened

    async def _open_stored(self, session_id: str, servers: Sequence[ClientMcpServer]) -> AcpSession:
        store = await self.store()
        info = await store.info(session_id)
        if self._options.config is not None:
            config: Config = self._options.config
        else:
            loaded = await load_session_config(
                store, session_id, trust_project=self._options.trust_project
            )
            config = loaded.config
        started = await start_client_servers(servers)
        session = AcpSession(id=session_id, workspace=info.cwd, agent=None, servers=started)
        try:
            session.agent = await open_agent(
                config=config,
                cwd=await asyncio.to_thread(stored_os_path, info.cwd),
                store=store,
                model=None,
                session_id=session_id,
                script=self._options.script,
                gateway=self._gateway(),
                responder=self._responder(session),
                front_end=lambda: lent_by(session.prompting, session.id),
                tools=started.register_into(default_registry()),
                clock=self._options.clock,
            )
        except LeaseError as held:
            await started.aclose()
            session.servers = ClientServers()
            session.stored_log = (await store.inspect(session_id)).events
            session.read_only = (
                f"session {session_id} is open for writing in another process ({held}); "
                "it is shown read-only"
            )
        except BaseException:
            await started.aclose()
            raise
        return session

    async def release(self, session: AcpSession, holder: str) -> None:
        """`holder` lets go; the last one disposes the Agent (ending a running turn) and stops
        the client's MCP servers."""
        session.holders.discard(holder)
        if session.holders or self._sessions.get(session.id) is not session:
            return
        del self._sessions[session.id]
        await self._dispose(session)

    async def aclose(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await self._dispose(session)
        if self._store is not None:
            await self._store.close()
            self._store = None

    async def _dispose(self, session: AcpSession) -> None:
        try:
            if session.agent is not None:
                await session.agent.dispose()
        finally:
            await session.servers.aclose()

    async def _config_for(self, cwd: Path) -> Config:
        if self._options.config is not None:
            given: Config = self._options.config
            return given
        loaded = await asyncio.to_thread(
            load_config_report, cwd, trust_project=self._options.trust_project
        )
        return loaded.config

    def _gateway(self) -> Any:
        factory = self._options.gateway_factory
        return factory() if factory is not None else None

    def _responder(
        self, session: AcpSession
    ) -> Callable[[PermissionQuestion], Awaitable[PermissionAnswer]]:
        async def respond(question: PermissionQuestion) -> PermissionAnswer:
            return await self._ask(session, question)

        return respond
