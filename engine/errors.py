"""The one base of every error a front end must handle.

A front end (the CLI, the TUI, the ACP bridge, an embedding program) catches `TrellisError` to show
any of them in place with its message instead of crashing, and what is stored stays stored. Each
keeps its older bases (`ValueError`, `RuntimeError`, ...) so callers that catch those still do.
Beneath it:

- `engine.config.ConfigError`: a configuration file or value is wrong.
- `engine.store.StoreError` (and its subclasses): the database cannot be read or written.
- `engine.gateway.base.GatewayError`: a model call failed.
- `engine.gateway.scripted.ScriptError`: a script for the scripted model cannot be played.
- `engine.agent.compactor.CompactionError`: `/compact` could not run; nothing changed.
- `engine.commands.CommandUsageError`: a slash command's arguments do not fit it.
- `engine.context.budget.ContextBudgetExceededError`: a request cannot fit its budget.
- `engine.context.egress.EgressRefusedError`: a request would carry material above its model's class.
- `engine.agent.agent.AgentClosedError`: the agent was disposed.
- `engine.context.areas.AreaLoadError`: an Area named in the configuration cannot be loaded.
- `engine.tools.mcp_server.McpServerError`: a configured MCP server cannot be started.
"""

from __future__ import annotations


class TrellisError(Exception):
    """An error with a message meant for the person using Trellis."""
