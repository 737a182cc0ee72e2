"""Building an Agent from the configuration: a new session, or a stored one resumed."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from engine.agent.agent import Agent
from engine.agent.assembler import Assembler
from engine.agent.followers import Followers, rebuild_state
from engine.agent.options import AgentOptions
from engine.agent.runtime import Runtime, rebuild_from_log
from engine.config import CheckpointsConfig, Config, ConfigError
from engine.context.area import ContextAreaImplementation, RestorableArea
from engine.context.areas import BUILTIN_KINDS, load_area, restorable_kinds
from engine.events import Event, PermissionModeSet, SessionRewind
from engine.gateway.base import Gateway, GatewayType
from engine.gateway.factory import api_key_env_of, make_gateway
from engine.os_text import storable_os_text, stored_os_path
from engine.paths import data_dir, trust_file_path, user_config_file
from engine.permission_mode import PermissionMode
from engine.redaction import Redactor
from engine.rewind_intervals import RewoundIntervals
from engine.session import Session
from engine.store.base import SessionStore
from engine.tools import ToolRegistry, default_registry
from engine.tools.front_end import FrontEndLender
from engine.tools.mcp import McpToolset
from engine.tools.permission import HeadlessPolicy, PermissionBroker, PermissionResponder

if TYPE_CHECKING:
    from engine.checkpoints import CheckpointStore, Unavailable
    from engine.context import ContextRebuilder, RebuiltContext
    from engine.local_servers import LocalServer


def held_secrets(config: Config) -> Redactor:
    """Every secret the configuration makes Trellis hold, read from the environment now: each
    model entry's API key, each MCP server's `env` values, the `[serve]` token."""
    return Redactor(
        [
            *(os.environ.get(api_key_env_of(entry), "") for entry in config.models.values()),
            *(value for server in config.mcp_servers for value in server.env.values()),
            config.serve.token() or "",
        ]
    )


def agent_options(config: Config) -> AgentOptions:
    """The loop's limits from the config; retries follow the bound model entry (`max_retries`
    left unset)."""
    return AgentOptions(
        max_steps=config.agent.max_steps,
        tool_timeout=config.agent.tool_timeout,
        max_tool_output=config.agent.max_tool_output,
        protected_paths=(user_config_file(), trust_file_path()),
        allowed_protected=tuple(Path(path) for path in config.agent.allow_protected_writes),
    )


async def open_agent(
    *,
    config: Config,
    cwd: Path,
    store: SessionStore | None = None,
    model: str | None = None,
    session_id: str | None = None,
    script: Path | None = None,
    gateway: Gateway | None = None,
    responder: PermissionResponder | None = None,
    tools: ToolRegistry | None = None,
    options: AgentOptions | None = None,
    clock: Callable[[], float] = time.time,
    extra_secrets: Sequence[str] = (),
    front_end: FrontEndLender | None = None,
    local_servers: Sequence[LocalServer] | None = None,
    mode: PermissionMode | None = None,
) -> Agent:
    """A ready Agent. With `session_id` the stored session is loaded (its writer lease taken, its
    tail repaired) and its Context rebuilt from the log; otherwise a new session is opened, which
    enters the store (with its id, leased to this store) at its first `user/message`.

    `gateway` replaces the one the model entry would make (tests pass a ScriptedGateway).
    `extra_secrets`: values the front end holds beyond the configuration's (the serve token when
    it is not from the environment), redacted as API keys are.
    `front_end` says, for each tool call, which files and terminal a front end lends the tools
    (an ACP editor's buffers and terminal); without it they use the local disk and processes.
    A model a local server serves (`ollama/qwen3:8b`), named by `model`, the default or the
    stored session, is asked of that server first (`local_servers`: default, the well-known ones
    or those `TRELLIS_LOCAL_SERVERS` names).
    Raises ConfigError for an unknown model or a local one that is not served, StoreError for store problems, AreaLoadError for a
    configured Area that cannot be loaded, McpServerError for a configured MCP server that fails
    to start (a broken server is reported, not silently dropped).
    """

    gateways = _Gateways(script, held_secrets(config).with_secrets(*extra_secrets))
    # What opening has taken so far (the writer lease, MCP servers) is given back if a later step
    # fails or the opening is cancelled; once the Agent exists, its aclose does that.
    async with AsyncExitStack() as opened:
        if session_id is None:
            state = await _open_new(
                opened, config, cwd, store, model, gateways, gateway, local_servers, clock
            )
        else:
            if store is None:
                raise ValueError("resuming a session needs a store")
            state = await _open_stored(
                opened, config, store, session_id, model, gateways, gateway, local_servers, clock
            )
        state.permission = PermissionBroker(
            responder if responder is not None else HeadlessPolicy()
        )
        await state.follow_log()
        _bind(state, model, mode)
        if gateway is None:
            gateway, model_id = await _bound_gateway(state, gateways)
        else:
            binding = state.assembler.binding
            model_id = binding.entry.model or binding.name
        rebuilt = await state.rebuilt(gateway.gateway_type)
        session, assembler, config = state.session, state.assembler, state.config
        runtime = Runtime(
            session=session,
            gateway=gateway,
            model_id=model_id,
            workspace=state.workspace,
            tools=state.mcp.register_into(tools if tools is not None else default_registry()),
            permission=state.permission,
            assembler=assembler,
            rebuilt=rebuilt,
            area_kinds=state.kinds,
            # models found after opening (a local server's, `Agent.add_models`) are the
            # assembler's: a switch to one makes its gateway from there
            gateway_factory=lambda name: gateways.make(name, runtime.assembler.config),
            redact=gateways.secrets,
            front_end=front_end,
            options=options or agent_options(config),
            checkpoints=None
            if store is None
            else partial(
                _open_checkpoints,
                state.workspace,
                config.checkpoints,
                session.id,
                assembler.secret_patterns,
                clock,
            ),
            rewound=state.rewound,
        )
        agent = Agent(
            runtime,
            fork=None if store is None else partial(_fork, store, session.id),
            # run in reverse: servers close first, the writer lease is given back last
            on_dispose=(
                *(() if store is None else (partial(store.release, session.id),)),
                state.mcp.aclose,
            ),
        )
        opened.pop_all()  # the Agent's aclose gives them back from here on
        opened.push_async_callback(agent.aclose)
        for area in state.areas:
            agent.register_area(area)
        await session.flush()
        opened.pop_all()
        return agent


@dataclass(frozen=True, slots=True)
class _Gateways:
    """Makes a model entry's gateway: a scripted one plays `script`, every one redacts `secrets`."""

    script: Path | None
    secrets: Redactor

    def make(self, name: str, config: Config) -> tuple[Gateway, str]:
        """The gateway for `name` and the model id it asks for."""
        _, entry = config.model(name)
        script = self.script if entry.provider == "scripted" else None
        return make_gateway(name, entry, script=script, redactor=self.secrets), entry.model or name


class _Prepared(NamedTuple):
    """A gateway made before the session's model is bound: kept when the binding names it."""

    name: str
    gateway: Gateway
    model_id: str


@dataclass(slots=True, kw_only=True)
class _Opening:
    """What opening a new or a stored session gives the steps both share."""

    config: Config
    workspace: Path
    session_id: str
    store: SessionStore | None
    clock: Callable[[], float]
    assembler: Assembler
    mcp: McpToolset
    kinds: Mapping[str, type[RestorableArea]]
    areas: list[ContextAreaImplementation] = field(default_factory=list)
    prepared: _Prepared | None = None
    create: Callable[[], Awaitable[object]] | None = None  # a new session enters the store by it
    rebuilder: ContextRebuilder | None = (
        None  # resume: the Context, in the prepared gateway's format
    )
    rewound: RewoundIntervals = field(default_factory=RewoundIntervals)
    permission: PermissionBroker = field(init=False)
    session: Session = field(init=False)

    async def follow_log(self) -> None:
        """A new session starts empty; a stored one's log is streamed once through what rebuilds
        the working state (and again, whole, in the rare log with a rewind)."""
        rebuilder = self.rebuilder
        if rebuilder is None:
            self.session = Session(
                self.session_id, self.store, clock=self.clock, create=self.create
            )
            return
        assert self.store is not None
        assembler, permission, rewound = self.assembler, self.permission, self.rewound

        def follow(event: Event) -> None:
            data = event.data
            assembler.follow(data)
            permission.follow(data)
            rebuilder.apply(event)
            if type(data) is SessionRewind:  # by exact class (see `Payload`)
                rewound.note(event)

        self.session = await Session.reopen(
            self.session_id, self.store, follow=follow, clock=self.clock
        )
        if rewound:
            # A rewind takes earlier events out of the history: the state is built again,
            # from the whole log, once every rewind is known (a log without one pays nothing).
            start = Followers.starting(assembler, permission, rebuilder.context.gateway_type)
            again = await rebuild_state(self.session, rewound, start)
            self.assembler, self.permission, self.rebuilder = (
                again.assembler,
                again.permission,
                again.rebuilder,
            )

    async def rebuilt(self, gateway_type: GatewayType) -> RebuiltContext | None:
        """The stored Context in the bound gateway's format (replayed again if it guessed wrong)."""
        rebuilder = self.rebuilder
        if rebuilder is None or self.session.held_from <= 0:
            return None
        if rebuilder.context.gateway_type is not gateway_type:
            rebuilder = await rebuild_from_log(self.session, gateway_type, self.rewound)
        return rebuilder.snapshot()


async def _open_new(
    opened: AsyncExitStack,
    config: Config,
    cwd: Path,
    store: SessionStore | None,
    model: str | None,
    gateways: _Gateways,
    gateway: Gateway | None,
    local_servers: Sequence[LocalServer] | None,
    clock: Callable[[], float],
) -> _Opening:
    """A new session: its gateway made and its configured Areas loaded before anything starts."""
    workspace = await asyncio.to_thread(cwd.resolve)
    config = await _with_local_model(config, model or config.default_model, local_servers)
    name, _ = config.model(model)
    prepared = None if gateway is not None else _Prepared(name, *gateways.make(name, config))
    areas = [load_area(entry.path, entry.args) for entry in config.areas]
    mcp = await _connect(opened, config)
    session_id = uuid.uuid4().hex
    create = None
    if store is not None:
        # stored at its first user/message, so a session left without a word (a failed
        # slash command) leaves nothing behind; a directory name that is not UTF-8 is escaped
        cwd_text = storable_os_text(str(workspace))
        create = partial(store.create, cwd=cwd_text, model=name, session_id=session_id)
    return _Opening(
        config=config,
        workspace=workspace,
        session_id=session_id,
        store=store,
        clock=clock,
        assembler=Assembler(config=config, session_id=session_id, workspace=workspace),
        mcp=mcp,
        kinds=BUILTIN_KINDS,
        areas=areas,
        prepared=prepared,
        create=create,
    )


async def _open_stored(
    opened: AsyncExitStack,
    config: Config,
    store: SessionStore,
    session_id: str,
    model: str | None,
    gateways: _Gateways,
    gateway: Gateway | None,
    local_servers: Sequence[LocalServer] | None,
    clock: Callable[[], float],
) -> _Opening:
    """A stored session: its writer lease taken, and a gateway guessed from the model it names
    (`model` or the store's record), so the Context is replayed in that gateway's format."""
    info = await store.acquire(session_id)  # the log itself is streamed by `follow_log`
    opened.push_async_callback(store.release, session_id)
    config = await _with_local_model(config, model or info.model or None, local_servers)
    workspace = await asyncio.to_thread(stored_os_path, info.cwd)
    kinds = restorable_kinds(entry.path for entry in config.areas)
    mcp = await _connect(opened, config)
    prepared = None
    if gateway is None:
        guess = model if model is not None else info.model or None
        with suppress(ConfigError):
            name, _ = config.model(guess)
            prepared = _Prepared(name, *gateways.make(name, config))
    guessed = gateway if prepared is None else prepared.gateway
    from engine.context import ContextRebuilder

    return _Opening(
        config=config,
        workspace=workspace,
        session_id=session_id,
        store=store,
        clock=clock,
        assembler=Assembler(config=config, session_id=session_id, workspace=workspace),
        mcp=mcp,
        kinds=kinds,
        prepared=prepared,
        rebuilder=ContextRebuilder(
            GatewayType.scripted if guessed is None else guessed.gateway_type
        ),
    )


async def _connect(opened: AsyncExitStack, config: Config) -> McpToolset:
    """The configured MCP servers, closed if the opening fails (raises McpServerError)."""
    mcp = await McpToolset.connect(config.mcp_servers)
    opened.push_async_callback(mcp.aclose)
    return mcp


def _bind(state: _Opening, model: str | None, mode: PermissionMode | None) -> None:
    """Bind the session's model (`model`, else what it had) and its permission mode."""
    session, permission, grants = state.session, state.permission, state.assembler.grants
    grant = grants.active
    if grant is None or (model is not None and model != grant.model):
        name, _ = state.config.model(model if model is not None else None)
        session.append(grants.bind(name))
    if mode is not None and (mode != permission.mode or mode == "approve-all"):
        # asked for at opening: approve-all too, which a reopening would not keep
        permission.follow(session.append(PermissionModeSet(mode=mode)).data)
    elif permission.mode == "approve-all":
        fallback = PermissionModeSet(mode="ask", resumed=True)
        permission.follow(session.append(fallback).data)


async def _bound_gateway(state: _Opening, gateways: _Gateways) -> tuple[Gateway, str]:
    """The gateway of the bound model: the prepared one when it is that model's, else a new one
    (the prepared one closed)."""
    binding, prepared = state.assembler.binding, state.prepared
    if prepared is not None:
        if prepared.name == binding.name:
            return prepared.gateway, prepared.model_id
        await prepared.gateway.aclose()
    return gateways.make(binding.name, state.config)


async def _fork(store: SessionStore, session_id: str, at_seq: int) -> str:
    return (await store.fork(session_id, at_seq)).id


async def _open_checkpoints(
    workspace: Path,
    settings: CheckpointsConfig,
    session_id: str,
    patterns: Sequence[str],
    clock: Callable[[], float],
) -> CheckpointStore | Unavailable:
    from engine.checkpoints import CheckpointStore

    return await CheckpointStore.open(
        workspace, data_dir(), settings, session_id, secret_patterns=patterns, clock=clock
    )


async def _with_local_model(
    config: Config, name: str | None, servers: Sequence[LocalServer] | None
) -> Config:
    """`config` knowing `name` when it is a model a local server serves (asked of that server)."""
    if name is None or name in config.models:
        return config
    from engine.local_servers import local_servers
    from engine.model_catalog import with_named_local_models

    chosen = local_servers() if servers is None else servers
    return await with_named_local_models(config, (name,), chosen)
