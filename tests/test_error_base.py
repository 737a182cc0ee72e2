"""Every error a front end must handle derives from `engine.errors.TrellisError`, and keeps the
older base its existing callers catch it by."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.agent import open_agent
from engine.agent.agent import AgentClosedError
from engine.agent.compactor import CompactionError
from engine.commands import CommandUsageError
from engine.config import Config, ConfigError
from engine.context.areas import AreaLoadError
from engine.context.budget import ContextBudgetExceededError
from engine.context.egress import EgressRefusedError
from engine.errors import TrellisError
from engine.gateway.base import GatewayError
from engine.gateway.scripted import ScriptError
from engine.store import StoreError
from engine.store.errors import ForkPointError, UnknownSessionError
from engine.store.sqlite.store import SQLiteStore
from engine.tools.mcp_server import McpServerError


@pytest.mark.parametrize(
    ("error", "kept"),
    [
        (ConfigError, Exception),
        (StoreError, Exception),
        (UnknownSessionError, KeyError),
        (ForkPointError, ValueError),
        (GatewayError, Exception),
        (ScriptError, ValueError),
        (CompactionError, RuntimeError),
        (CommandUsageError, ValueError),
        (ContextBudgetExceededError, Exception),
        (EgressRefusedError, Exception),
        (AgentClosedError, RuntimeError),
        (AreaLoadError, ImportError),
        (McpServerError, Exception),
    ],
)
def test_front_end_errors_share_one_base(error: type[Exception], kept: type[Exception]) -> None:
    assert issubclass(error, TrellisError)
    assert issubclass(error, kept)


async def test_a_front_end_catches_them_by_the_base(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with pytest.raises(TrellisError, match="no-such-model"):
        await open_agent(config=Config(), cwd=workspace, model="no-such-model")
    async with SQLiteStore(tmp_path / "sessions.sqlite") as store:
        with pytest.raises(TrellisError, match="nope"):
            await open_agent(config=Config(), cwd=workspace, store=store, session_id="nope")
    agent = await open_agent(config=Config(), cwd=workspace)
    await agent.aclose()
    with pytest.raises(TrellisError, match="disposed"):
        agent.send("hello")
