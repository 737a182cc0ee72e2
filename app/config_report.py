"""The configuration a command runs with, once what the user must know of it is said."""

from __future__ import annotations

import sys

from engine.agent.factory import held_secrets
from engine.config import Config, LoadedConfig
from engine.redaction import RedactingLogFilter


def reported(loaded: LoadedConfig, log_secrets: RedactingLogFilter | None) -> Config:
    """The config, after one line on stderr naming what an untrusted project file could not set;
    from here on `trellis.log` is kept clear of the secrets it makes Trellis hold."""
    if log_secrets is not None:
        log_secrets.redactor = held_secrets(loaded.config)
    notice = loaded.project.notice() if loaded.project is not None else None
    if notice is not None:
        print(f"trellis: {notice}", file=sys.stderr)
    return loaded.config
