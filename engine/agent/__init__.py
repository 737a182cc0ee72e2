"""The agent loop (docs/spec/context-injection.md): turns, the outbox, admission, tools."""

from engine.agent.admission import Allow, PromptDecision, PromptListener, PromptSubmission, Reject
from engine.agent.agent import Agent, AgentClosedError, ToolHook
from engine.agent.factory import open_agent
from engine.agent.options import AgentOptions

__all__ = [
    "Agent",
    "AgentClosedError",
    "AgentOptions",
    "Allow",
    "PromptDecision",
    "PromptListener",
    "PromptSubmission",
    "Reject",
    "ToolHook",
    "open_agent",
]
