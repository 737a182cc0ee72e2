"""The agent-loop fixtures (`store`, `make_agent`) for the ACP tests, and what the replay scenarios
they translate need (`tests/replay/conftest.py`: no proxy, a key for the fake endpoint)."""

from tests.agent.conftest import make_agent, store
from tests.replay.conftest import _fake_key, _no_proxy

__all__ = ["_fake_key", "_no_proxy", "make_agent", "store"]
