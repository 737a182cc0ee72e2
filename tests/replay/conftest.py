"""The agent-loop fixtures (`store`, `make_agent`) for the replay tests, and the environment the
network scenarios need: no proxy between them and the fake endpoint (`_no_proxy`, autouse), and a
key to send it."""

import pytest

from tests.agent.conftest import make_agent, store
from tests.gateway.conftest import _no_proxy
from tests.replay.live_scenarios import KEY_ENV

__all__ = ["_no_proxy", "make_agent", "store"]


@pytest.fixture(autouse=True)
def _fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-replay-test")
