"""Building an Agent from the configuration: a new session, or a stored one resumed."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from engine.agent.agent import Agent
from engine.agent.assembler import Assembler
from engine.agent.checkpointing import StoreOpener
from engine.agent.followers import Followers, rebuild_state
from engine.agent.options import AgentOptions
from engine.agent.runtime import Runtime, replay_log
from engine.config import Config, ConfigError
from engine.context.area import ContextAreaImplementation
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
    from engine.context import ContextReplayer, RebuiltContext
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

    secrets = held_secrets(config).with_secrets(*extra_secrets)

    def gateway_for(name: str, known: Config | None = None) -> tuple[Gateway, str]:
        _, entry = (config if known is None else known).model(name)
        made = make_gateway(
            name,
            entry,
            script=script if entry.provider == "scripted" else None,
            redactor=secrets,
        )
        return made, entry.model or name

    # What opening has taken so far (the writer lease, MCP servers) is given back if a later step
    # fails or the opening is cancelled; once the Agent exists, its dispose does that.
    async with AsyncExitStack() as opened:
        made: tuple[str, Gateway, str] | None = None
        areas: list[ContextAreaImplementation] = []
        create: Callable[[], Awaitable[object]] | None = None
        stored_model = ""
        if session_id is not None:
            if store is None:
                raise ValueError("resuming a session needs a store")
            info = await store.acquire(session_id)  # the log itself is streamed below
            opened.push_async_callback(store.release, session_id)
            stored_model = info.model
            config = await _with_local_model(config, model or stored_model or None, local_servers)
            workspace = await asyncio.to_thread(stored_os_path, info.cwd)
            kinds = restorable_kinds(entry.path for entry in config.areas)
            mcp = await McpToolset.connect(config.mcp_servers)  # MCP: raises McpServerError
            opened.push_async_callback(mcp.aclose)
        else:
            workspace = await asyncio.to_thread(cwd.resolve)
            config = await _with_local_model(config, model or config.default_model, local_servers)
            name, _ = config.model(model)
            if gateway is None:
                made = (name, *gateway_for(name))
            areas = [load_area(entry.path, entry.args) for entry in config.areas]
            kinds = BUILTIN_KINDS
            mcp = await McpToolset.connect(config.mcp_servers)  # MCP: raises McpServerError
            opened.push_async_callback(mcp.aclose)
            session_id = uuid.uuid4().hex
            if store is not None:
                # stored at its first user/message, so a session left without a word (a failed
                # slash command) leaves nothing behind; a directory name that is not UTF-8 is escaped
                created, cwd_text = store, storable_os_text(str(workspace))

                async def create_session() -> object:
                    return await created.create(cwd=cwd_text, model=name, session_id=session.id)

                create = create_session
        assembler = Assembler(config=config, session_id=session_id, workspace=workspace)
        rewound = RewoundIntervals()
        permission = PermissionBroker(responder if responder is not None else HeadlessPolicy())
        replayer: ContextReplayer | None = None
        if store is not None and create is None:
            # Resume streams the stored log once through what rebuilds the working state. The
            # Context is replayed in the format of the model the session will be bound to, which
            # the store's record names (a second pass follows in the rare case it guessed wrong).
            if gateway is None:
                guess = model if model is not None else stored_model or None
                with suppress(ConfigError):
                    name, _ = config.model(guess)
                    made = (name, *gateway_for(name))
            guessed = gateway if made is None else made[1]
            from engine.context import ContextReplayer

            replayer = ContextReplayer(
                GatewayType.scripted if guessed is None else guessed.gateway_type
            )
            context = replayer

            def follow(event: Event) -> None:
                data = event.data
                assembler.follow(data)
                permission.follow(data)
                context.apply(event)
                if type(data) is SessionRewind:  # by exact class (see `Payload`)
                    rewound.note(event)

            session = await Session.reopen(session_id, store, follow=follow, clock=clock)
            if rewound:
                # A rewind takes earlier events out of the history: the state is built again,
                # from the whole log, once every rewind is known (a log without one pays nothing).
                start = Followers.starting(assembler, permission, replayer.context.gateway_type)
                again = await rebuild_state(session, rewound, start)
                assembler, permission, replayer = again.assembler, again.permission, again.replayer
        else:
            session = Session(session_id, store, clock=clock, create=create)
        grant = assembler.grants.active
        if grant is None or (model is not None and model != grant.model):
            name, _ = config.model(model if model is not None else None)
            payload = assembler.grants.bind(name)
            session.append(payload)
        if mode is not None and (mode != permission.mode or mode == "approve-all"):
            # asked for at opening: approve-all too, which a reopening would not keep
            permission.follow(session.append(PermissionModeSet(mode=mode)).data)
        elif permission.mode == "approve-all":
            fallback = PermissionModeSet(mode="ask", resumed=True)
            permission.follow(session.append(fallback).data)
        binding = assembler.binding
        model_id = binding.entry.model or binding.name
        if gateway is None:
            if made is not None and made[0] == binding.name:
                _, gateway, model_id = made
            else:
                if made is not None:
                    await made[1].aclose()
                gateway, model_id = gateway_for(binding.name)
        rebuilt: RebuiltContext | None = None
        if replayer is not None and session.held_from > 0:
            if replayer.context.gateway_type is not gateway.gateway_type:
                replayer = await replay_log(session, gateway.gateway_type, rewound)
            rebuilt = replayer.snapshot()

        releases: list[Callable[[], Awaitable[None]]] = []
        if store is not None:
            stored = store

            async def release() -> None:
                await stored.release(session.id)

            releases.append(release)

        async def fork(at_seq: int) -> str:
            assert store is not None
            return (await store.fork(session.id, at_seq)).id

        checkpoints: StoreOpener | None = None
        if store is not None:
            settings, patterns = config.checkpoints, assembler.secret_patterns

            async def open_checkpoints() -> CheckpointStore | Unavailable:
                from engine.checkpoints import CheckpointStore

                return await CheckpointStore.open(
                    workspace,
                    data_dir(),
                    settings,
                    session.id,
                    secret_patterns=patterns,
                    clock=clock,
                )

            checkpoints = open_checkpoints

        runtime = Runtime(
            session=session,
            gateway=gateway,
            model_id=model_id,
            workspace=workspace,
            tools=mcp.register_into(tools if tools is not None else default_registry()),
            permission=permission,
            assembler=assembler,
            rebuilt=rebuilt,
            area_kinds=kinds,
            # models found after opening (a local server's, `Agent.add_models`) are the
            # assembler's: a switch to one makes its gateway from there
            gateway_factory=lambda name: gateway_for(name, runtime.assembler.config),
            redact=secrets,
            front_end=front_end,
            options=options or agent_options(config),
            checkpoints=checkpoints,
            rewound=rewound,
        )
        agent = Agent(
            runtime,
            fork=fork if store is not None else None,
            # run in reverse: servers close first, the writer lease is given back last
            on_dispose=(*releases, mcp.aclose),
        )
        opened.pop_all()  # the Agent's dispose gives them back from here on
        opened.push_async_callback(agent.dispose)
        for area in areas:
            agent.register_area(area)
        await session.flush()
        opened.pop_all()
        return agent


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
