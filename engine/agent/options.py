"""The agent loop's limits, as explicit fields rather than numbers in code."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_KEEP_GROUPS = 2
"""The newest complete history groups `/compact` leaves as they are."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOptions:
    """The loop's limits and retry policy, fixed when the Agent is opened."""

    max_steps: int = 50
    """A turn that reaches this many steps ends with `max_steps`."""
    max_retries: int | None = None
    """Transient gateway failures (timeouts, 429, 5xx) retried per request; None: the
    `max_retries` of the model entry the request goes to, so `/model` brings its own."""
    retry_backoff: float = 0.5
    """First retry delay in seconds; doubles with each attempt."""
    tool_timeout: float = 120.0
    max_tool_output: int = 100_000
    """Characters of one tool result; longer output is truncated with a marker."""
    protected_paths: tuple[Path, ...] = ()
    """Files the write tools refuse besides any `.trellis/` (the user config, the trust record)."""
    allowed_protected: tuple[Path, ...] = ()
    """Protected paths the user allowed the write tools to change, relative to the workspace."""
