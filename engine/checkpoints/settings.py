"""What a workspace's checkpoints leave out, and which workspaces get none.

The `[checkpoints]` section itself is `engine.config.CheckpointsConfig`; this module turns it into
the shadow repository's `info/exclude` and says why a workspace is refused.
"""

from __future__ import annotations

from pathlib import Path

from engine.config import CheckpointsConfig

DEFAULT_EXCLUDES = (".git/", ".venv/", "venv/", "node_modules/", "__pycache__/")
"""Left out of every checkpoint beside the workspace's own `.gitignore` files: another
repository's database, virtual environments and caches that a command rebuilds. `.trellis/` is
kept: the project's configuration is part of what a rewind puts back."""


def exclude_text(settings: CheckpointsConfig) -> str:
    """The shadow repository's `info/exclude`: the defaults, then the configured patterns."""
    return "".join(f"{pattern}\n" for pattern in (*DEFAULT_EXCLUDES, *settings.exclude))


def refused_workspace(workspace: Path) -> str | None:
    """Why `workspace` (resolved) gets no checkpoints whatever its size, None when it may: the
    home folder and `/` hold everything a user has, which no snapshot of a session should copy."""
    if workspace == Path(workspace.anchor):
        return f"the workspace is the file system root ({workspace})"
    if workspace == Path.home().resolve():
        return f"the workspace is the home folder ({workspace})"
    return None


def anchored_pattern(relative: str) -> str | None:
    """A `.gitignore` pattern matching exactly the workspace-relative path `relative`; None when
    none can (a newline in the name)."""
    if "\n" in relative or "\r" in relative:
        return None
    escaped = "".join("\\" + char if char in "\\*?[" else char for char in relative)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped
