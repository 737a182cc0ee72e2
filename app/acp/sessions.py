"""The ACP server's sessions: one Agent per session per process, shared by every connection that
opened it, built the way `trellis run` builds one (`open_agent`, the workspace's config with its
trust rules, a resumed session's own workspace config). A loaded session's Agent is opened after
`session/load` has answered (`app.acp.opening`); until then the session reads its log from the
store.

A session another process holds for writing (its lease) is opened read-only: it can be replayed,
and a prompt gets a clear error. On a store that can follow (PostgreSQL) it is a replica fed each
event as the writer commits it (`engine.replica`), so its clients see the other process's turns
live; on SQLite it is the stored log as it was when opened. An Agent is disposed when the last
connection holding it lets go, which gives its writer lease back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.acp.client_tools import lent_by
from app.acp.mcp import ClientMcpServer, ClientServers, start_client_servers
from app.acp.opening import DeferredOpening, SessionOpenError
from engine.agent import Agent, open_agent
from engine.agent.session_config import load_session_config
from engine.config import Config, load_config_report
from engine.events import Event, LiveEvent
from engine.os_text import storable_os_text, stored_os_path
from engine.replica import followed_session
from engine.session import Immediate, Session
from engine.store.base import FollowingStore
from engine.store.chooser import Store, open_store
from engine.store.errors import LeaseError
from engine.tools import default_registry
from engine.tools.permission import PermissionAnswer, PermissionQuestion

if TYPE_CHECKING:
    from app.acp.core import AcpOptions
    from app.telemetry import LiveTelemetry
    from engine.config import TelemetryConfig

log = logging.getLogger(__name__)

Asker = Callable[["AcpSession", PermissionQuestion], Awaitable[PermissionAnswer]]
"""Asks the connection whose prompt runs (`AcpSession.prompting`) for permission."""


@dataclass(eq=False)
class AcpSession:
    id: str
    workspace: str
    """The session's stored working directory (escaped as `engine.os_text` stores it)."""
    agent: Agent | None
    """None when the session is read-only, or while its Agent is opening."""
    opening: DeferredOpening | None = None
    """A loaded session's Agent, opened after the load answered (None: read-only, or new)."""
    store: Store | None = None
    """Where a loaded session's log is read while its Agent opens."""
    stored_end: int = 0
    """A loaded session's event count when its lease was taken (its replay ends there)."""
    stored_log: tuple[Event, ...] = ()
    read_only: str = ""
    """Why prompts are refused (another process holds the session for writing); "" if writable."""
    replica: Session | None = None
    """A read-only session followed as another process writes it (None: not followed)."""
    following: AsyncExitStack = field(default_factory=AsyncExitStack)
    """Ends the following when the session is let go."""
    servers: ClientServers = field(default_factory=ClientServers)
    holders: set[str] = field(default_factory=set)
    prompting: Any = None
    """The `AcpConnection` whose prompt runs now; it answers permission questions."""

    @property
    def next_seq(self) -> int:
        """The seq after the last event known here now."""
        if self.agent is not None:
            return len(self.agent.log)
        if self.opening is not None:
            return self.stored_end
        return len(self.replica.held) if self.replica is not None else len(self.stored_log)

    @property
    def live(self) -> bool:
        """Whether new events arrive: written here (an Agent, open or opening) or followed (a
        replica)."""
        return self.agent is not None or self.opening is not None or self.replica is not None

    async def ready(self) -> Agent | None:
        """The Agent, once open (None for a read-only session); raises `SessionOpenError` when
        it could not be opened."""
        if self.agent is None and self.opening is not None:
            return await self.opening.agent()
        return self.agent

    def events(
        self, from_seq: int, immediate: Immediate | None = None
    ) -> AsyncIterator[Sequence[Event | LiveEvent]]:
        """The event stream from `from_seq` in batches, as `Agent.event_batches` (only for a
        `live` session); while the Agent opens, it begins once the Agent is open."""
        if self.agent is not None:
            return self.agent.event_batches(from_seq, immediate=immediate)
        if self.opening is not None:
            return self._events_once_open(self.opening, from_seq, immediate)
        assert self.replica is not None
        return self.replica.batches(from_seq, immediate=immediate)

    async def _events_once_open(
        self, opening: DeferredOpening, from_seq: int, immediate: Immediate | None
    ) -> AsyncIterator[Sequence[Event | LiveEvent]]:
        with suppress(SessionOpenError):  # told to the client by the load and each prompt
            agent = await opening.agent()
            async for batch in agent.event_batches(from_seq, immediate=immediate):
                yield batch

    async def read(self, start: int, end: int) -> Sequence[Event]:
        """The durable events with `start <= seq < end`, from the store where not held."""
        if self.agent is not None:
            return await self.agent.read_log(start, end)
        if self.opening is not None:
            assert self.store is not None
            end = min(end, self.stored_end)
            return await self.store.read(self.id, start, end - 1) if start < end else ()
        if self.replica is not None:
            return await self.replica.read(start, end)
        return self.stored_log[start:end]


class SessionTable:
    """The process's open sessions and the store they live in."""

    def __init__(self, options: AcpOptions, ask: Asker) -> None:
        self._options = options
        self._ask = ask
        self._store: Store | None = None
        self._store_lock = asyncio.Lock()
        self._sessions: dict[str, AcpSession] = {}
        self._opening: dict[str, asyncio.Future[AcpSession]] = {}
        self._telemetry: dict[TelemetryConfig, LiveTelemetry] = {}
        """One trace sink per `[telemetry]` section the sessions' workspaces configure."""

    async def store(self) -> Store:
        """The configured store (`AcpOptions.store`), opened on first use."""
        async with self._store_lock:
            if self._store is None:
                options = self._options
                store = open_store(options.store, path=options.store_path, clock=options.clock)
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
                extra_secrets=self._options.secrets,
            )
        except BaseException:
            await started.aclose()
            raise
        self._trace(agent, config)
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
        """The session with its writer lease taken and its Agent to open later (`opening`), or
        read-only when another process holds the lease."""
        store = await self.store()
        info = await store.info(session_id)
        if self._options.config is not None:
            config: Config = self._options.config
        else:
            loaded = await load_session_config(
                store, session_id, trust_project=self._options.trust_project
            )
            config = loaded.config
        session = AcpSession(id=session_id, workspace=info.cwd, agent=None, store=store)
        try:
            # the lease now, so that the answer can say read-only; an interrupted tail is
            # repaired here, so the replay shows it as the Agent will hold it
            session.stored_end = (await store.acquire(session_id)).event_count
        except LeaseError as held:
            if isinstance(store, FollowingStore):
                # the stored log as written (an open turn is the writer's, not a crash) and
                # each event as the writer commits it
                following = followed_session(store, session_id)
                session.replica = await session.following.enter_async_context(following)
            else:
                session.stored_log = (await store.inspect(session_id)).events
            session.read_only = (
                f"session {session_id} is open for writing in another process ({held}); "
                "it is shown read-only"
            )
            return session
        try:
            session.servers = await start_client_servers(servers)
        except BaseException:
            await store.release(session_id)
            raise
        cwd = await asyncio.to_thread(stored_os_path, info.cwd)

        async def open_later() -> Agent:
            session.agent = await open_agent(
                config=config,
                cwd=cwd,
                store=store,
                model=None,
                session_id=session_id,
                script=self._options.script,
                gateway=self._gateway(),
                responder=self._responder(session),
                front_end=lambda: lent_by(session.prompting, session.id),
                tools=session.servers.register_into(default_registry()),
                clock=self._options.clock,
                extra_secrets=self._options.secrets,
            )
            self._trace(session.agent, config)
            return session.agent

        async def give_back() -> None:
            # taken again first: an opening stopped inside its own `acquire` may have left the
            # store without the writer it would `release` (the lease is this store's either way)
            await store.acquire(session_id)
            await store.release(session_id)

        session.opening = DeferredOpening(session_id, open_later, give_back)
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
            await self._store.aclose()
            self._store = None
        sinks, self._telemetry = list(self._telemetry.values()), {}
        for sink in sinks:
            await asyncio.to_thread(sink.close)  # each at most its `[telemetry] timeout`

    def _trace(self, agent: Agent, config: Config) -> None:
        """Send the agent's spans when its workspace's configuration names an endpoint."""
        settings = config.telemetry
        if not settings.otlp_endpoint:
            return
        sink = self._telemetry.get(settings)
        if sink is None:
            from app.telemetry import LiveTelemetry

            sink = self._telemetry[settings] = LiveTelemetry(settings)
        sink.watch(agent, config.models)

    async def _dispose(self, session: AcpSession) -> None:
        try:
            if session.opening is not None:
                session.agent = await session.opening.stop()
            if session.agent is not None:
                await session.agent.aclose()
        finally:
            try:
                await session.following.aclose()
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
