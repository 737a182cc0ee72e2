"""Fixtures of the ACP tests: the agent loop's (`store`, `make_agent`), what the replay scenarios
they translate need (`tests/replay/conftest.py`: no proxy, a key for the fake endpoint), the places
a test's Trellis uses (its data directory, an empty user config, a workspace), and the core in this
process (`server`, its models scripted by `replies`) that `tests.acp.peer.Peer` speaks to."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.acp.core import AcpOptions, AcpServer
from engine.config import Config
from engine.gateway.scripted import Reply, ScriptedGateway
from tests.agent.conftest import make_agent, store
from tests.replay.conftest import _fake_key, _no_proxy

__all__ = ["_fake_key", "_no_proxy", "make_agent", "store"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The data directory (`TRELLIS_HOME`) of the Trellis a test starts."""
    return tmp_path / "home"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """An empty user config (`TRELLIS_CONFIG`)."""
    path = tmp_path / "config.toml"
    path.write_text("")
    return path


@pytest.fixture
def replies() -> list[list[Reply]]:
    """Each new gateway plays the next script; a test appends scripts before opening sessions."""
    return []


@pytest.fixture
async def server(
    tmp_path: Path, workspace: Path, replies: list[list[Reply]]
) -> AsyncIterator[AcpServer]:
    """The core in this process, serving `workspace`, its store under `tmp_path`."""

    def gateway() -> ScriptedGateway:
        return ScriptedGateway(replies.pop(0) if replies else [])

    made = AcpServer(
        AcpOptions(
            store_path=tmp_path / "data" / "sessions.sqlite",
            roots=[workspace],
            config=Config(),
            gateway_factory=gateway,
        )
    )
    yield made
    await made.aclose()
