"""The agent-loop fixtures (`store`, `make_agent`) for the replay tests."""

from tests.agent.conftest import make_agent, store

__all__ = ["make_agent", "store"]
