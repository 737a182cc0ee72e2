"""Saving the model to start with: `default_model` in the user's config, and nothing else.

The file is the user's own: its comments, its order and every other key stay as they were (tomlkit
edits the document in place), and neither an entry nor a key is ever written, only the entry's
name. A detected entry resolves by that name at the next start (`engine.model_catalog`).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from engine.config import ConfigError
from engine.paths import user_config_file


def save_default_model(name: str, file: Path | None = None) -> Path:
    """Set `default_model = name` in the user config (`file`, else `user_config_file()`),
    creating the file and its directory when missing; returns the file written.

    Raises `ConfigError` naming the file when it cannot be read, is not TOML or cannot be
    written; the file is then as it was."""
    path = file if file is not None else user_config_file()
    if path.is_symlink():
        path = path.resolve()  # a managed dotfile: write the file the link points to
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read it to save default_model: {exc}", file=path) from exc
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        document = tomlkit.parse(text)
    except ParseError as exc:
        raise ConfigError(f"invalid TOML, default_model not saved: {exc}", file=path) from exc
    document["default_model"] = name
    try:
        _replace(path, tomlkit.dumps(document))
    except OSError as exc:
        raise ConfigError(f"cannot save default_model: {exc.strerror or exc}", file=path) from exc
    return path


def _replace(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all: a temporary file beside it, renamed over it,
    with the mode the file had."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    if mode is None:
        with path.open("x", encoding="utf-8") as new:  # the mode the umask gives new files
            new.write(text)
        return
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
