"""Paths the agent's write tools refuse: Trellis's own configuration
(docs/ARCHITECTURE.md, "Configuration and trust").

A `.trellis/` directory holds a project's config, which can start programs once trusted; the user
config and the trust record decide what runs. A model that could write them could give itself
what only the user may grant, so write_file and edit_file refuse them unless the user allowed the
path explicitly (`[agent] allow_protected_writes` in the config). These functions touch the file
system; tools call them from a worker thread.
"""

from __future__ import annotations

from pathlib import Path

from engine.paths import PROJECT_DIR_NAME
from engine.tools.tool import ToolContext

ALLOW_KEY = "agent.allow_protected_writes"


def write_refusal(ctx: ToolContext, target: Path, shown: str) -> str | None:
    """Why a write to the resolved `target` is refused, for the model to read; None if allowed.

    `.trellis` is matched without regard to case, since case-insensitive file systems open
    `.Trellis/config.toml` as the same file.
    """
    root = ctx.root.resolve()
    if any(target.is_relative_to(_resolved(root, allowed)) for allowed in ctx.allowed_protected):
        return None
    inside = target.relative_to(root).parts if target.is_relative_to(root) else ()
    if any(part.casefold() == PROJECT_DIR_NAME for part in inside):
        what = f"inside {PROJECT_DIR_NAME}/, the project's Trellis configuration"
    elif any(target == _resolved(root, path) for path in ctx.protected_paths):
        what = "Trellis's own configuration"
    else:
        return None
    return (
        f"refused: {shown!r} is {what}; the write tools may not change it unless the user "
        f"allows that path ({ALLOW_KEY} in the user config)"
    )


def _resolved(root: Path, path: Path) -> Path:
    return (root / path.expanduser()).resolve()
