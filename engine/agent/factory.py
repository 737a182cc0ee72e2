"""Building an Agent from the configuration: a new session, or a stored one resumed."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from engine.agent.agent import Agent
from engine.agent.assembler import Assembler
from engine.agent.options import AgentOptions
from engine.config import Config
from engine.context import RebuiltContext, rebuild_context
from engine.context.areas import load_area
from engine.events import Event
from engine.gateway.base import Gateway
from engine.gateway.factory import make_gateway
from engine.session import Session
from engine.store.base import SessionStore
from engine.tools import ToolRegistry, default_registry
from engine.tools.permission import HeadlessPolicy, PermissionBroker, PermissionResponder


def agent_options(config: Config, max_retries: int) -> AgentOptions:
    return AgentOptions(
        max_steps=config.agent.max_steps,
        max_retries=max_retries,
        tool_timeout=config.agent.tool_timeout,
        max_tool_output=config.agent.max_tool_output,
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
) -> Agent:
    """A ready Agent. With `session_id` the stored session is loaded (its writer lease taken, its
    tail repaired) and its Context rebuilt from the log; otherwise a new session is created.

    `gateway` replaces the one the model entry would make (tests pass a ScriptedGateway).
    Raises ConfigError for an unknown model, StoreError for store problems, AreaLoadError for a
    configured Area that cannot be loaded.
    """
    events: tuple[Event, ...] = ()
    if session_id is not None:
        if store is None:
            raise ValueError("resuming a session needs a store")
        loaded = await store.load(session_id)
        events = loaded.events
        workspace = Path(loaded.info.cwd)
    else:
        workspace = await asyncio.to_thread(cwd.resolve)
        name, _ = config.model(model)
        if store is not None:
            session_id = (await store.create(cwd=str(workspace), model=name)).id
        else:
            session_id = uuid.uuid4().hex
    session = Session(session_id, store, events, clock=clock)
    assembler = Assembler(config=config, session_id=session_id, workspace=workspace, events=events)
    grant = assembler.grants.active
    if grant is None or (model is not None and model != grant.model):
        name, _ = config.model(model if model is not None else None)
        payload = assembler.grants.bind(name)
        session.append(payload)
    binding = assembler.binding

    def gateway_for(name: str) -> tuple[Gateway, str]:
        _, entry = config.model(name)
        made = make_gateway(name, entry, script=script if entry.provider == "scripted" else None)
        return made, entry.model or name

    model_id = binding.entry.model or binding.name
    if gateway is None:
        gateway, model_id = gateway_for(binding.name)
    rebuilt: RebuiltContext | None = None
    if events:
        rebuilt = rebuild_context(gateway.gateway_type, events)
    permission = PermissionBroker(responder if responder is not None else HeadlessPolicy())
    permission.load_rules(events)

    async def fork(at_seq: int) -> str:
        assert store is not None
        return (await store.fork(session.id, at_seq)).id

    agent = Agent(
        session=session,
        gateway=gateway,
        model_id=model_id,
        workspace=workspace,
        tools=tools if tools is not None else default_registry(),
        permission=permission,
        assembler=assembler,
        rebuilt=rebuilt,
        gateway_factory=gateway_for,
        options=options or agent_options(config, binding.entry.max_retries),
        fork=fork if store is not None else None,
    )
    if not events:
        for entry in config.areas:
            agent.register_area(load_area(entry.path, entry.args))
    await session.flush()
    return agent
