"""The agent-loop fixtures (`store`, `make_agent`) for the ACP tests."""

from tests.agent.conftest import make_agent, store

__all__ = ["make_agent", "store"]
