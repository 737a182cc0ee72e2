"""Where Trellis keeps its files: the data directory, the user config, the project's `.trellis/`.

Nothing here creates a directory: the store does that when it opens, so an unwritable location is
reported by the code that needed it.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "trellis"
HOME_ENV = "TRELLIS_HOME"
"""Overrides the platform's user data directory (tests, portable installs)."""
CONFIG_ENV = "TRELLIS_CONFIG"
"""Names the user-level config file instead of the platform's user config directory."""
PROJECT_DIR_NAME = ".trellis"
CONFIG_FILE_NAME = "config.toml"
SESSIONS_DB_NAME = "sessions.sqlite"
TRUST_FILE_NAME = "trusted-projects.json"
SERVE_TOKEN_NAME = "serve-token"


def data_dir() -> Path:
    """`TRELLIS_HOME` if set, else the platform's user data directory for Trellis."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs  # only here: its import is a noticeable share of a command's start

    return Path(platformdirs.user_data_dir(APP_NAME))


def log_file_path() -> Path:
    """Where the command line writes its diagnostics."""
    return data_dir() / "trellis.log"


def sessions_db_path() -> Path:
    """The SQLite file that holds every session."""
    return data_dir() / SESSIONS_DB_NAME


def trust_file_path() -> Path:
    """The user's record of trusted project configurations (`engine.trust`)."""
    return data_dir() / TRUST_FILE_NAME


def serve_token_path() -> Path:
    """The token `trellis serve` generated when `TRELLIS_SERVE_TOKEN` is not set (mode 0600)."""
    return data_dir() / SERVE_TOKEN_NAME


def user_config_file() -> Path:
    """`TRELLIS_CONFIG` if set, else `config.toml` in the platform's user config directory."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME)) / CONFIG_FILE_NAME


def find_project_dir(cwd: Path) -> Path | None:
    """The nearest of `cwd` and its ancestors that holds a `.trellis/` directory."""
    start = cwd.expanduser().resolve()
    for directory in (start, *start.parents):
        if (directory / PROJECT_DIR_NAME).is_dir():
            return directory
    return None


def project_config_file(cwd: Path) -> Path | None:
    """`.trellis/config.toml` of the project around `cwd`, if that project has one."""
    project = find_project_dir(cwd)
    if project is None:
        return None
    candidate = project / PROJECT_DIR_NAME / CONFIG_FILE_NAME
    return candidate if candidate.is_file() else None
