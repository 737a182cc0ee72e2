"""Which store holds the sessions: `[store]` of the user config, or `TRELLIS_STORE_URL`.

A store URL decides where every session goes, and a PostgreSQL URL sends them off the machine: so
it is read from the user's own config only (a project's `.trellis/config.toml` naming `[store]` is
refused, trusted or not), a URL carrying a password is refused (the password comes from
`PGPASSFILE` or from the variable `password_env` names), and a server off loopback must be reached
over TLS with its certificate verified (`sslmode=verify-full`).

Read with `tomllib` and no pydantic: `trellis sessions` reads this before it lists, and starting
it stays cheap (tests/cli/test_cli_start.py).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from engine.paths import CONFIG_ENV, project_config_file, user_config_file
from engine.redaction import redacted_url
from engine.store.errors import StoreConfigError

URL_ENV = "TRELLIS_STORE_URL"
"""Names the store instead of the user config's `[store] url`."""

SCHEMES = ("postgresql", "postgres")
_KEYS = ("url", "password_env")
_TLS_MODE = "verify-full"


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreSettings:
    """Where sessions are stored: `url` None is the embedded SQLite file in the data directory."""

    url: str | None = None
    """A PostgreSQL URL without a password (TLS parameters added off loopback)."""
    password_env: str = ""
    """The environment variable that holds the password (empty: `PGPASSFILE` or none)."""
    source: str = ""
    """Where the URL came from (a file and key, or the variable), for error messages."""

    @property
    def shown(self) -> str:
        """The store as messages name it (never a secret)."""
        return redacted_url(self.url) if self.url else "the SQLite store"

    def password(self) -> str | None:
        """The password from the named variable; a named variable that is unset is an error."""
        if not self.password_env:
            return None
        value = os.environ.get(self.password_env)
        if not value:
            raise StoreConfigError(
                f"{self.source}: password_env names {self.password_env}, which is not set"
            )
        return value


def store_settings(cwd: Path | None = None) -> StoreSettings:
    """The store seen from `cwd`: `TRELLIS_STORE_URL`, else the user config's `[store]`.

    Raises `StoreConfigError` for a project config naming `[store]`, a bad key or URL.
    """
    if cwd is not None:
        project = project_config_file(cwd)
        if project is not None and "store" in _table_of(project):
            raise project_store_refused(project)
    user = user_config_file()
    table: Mapping[str, Any] = {}
    if user.is_file():
        table = store_table(_table_of(user), user)
    elif os.environ.get(CONFIG_ENV):
        raise StoreConfigError(f"{user}: no such file (named by {CONFIG_ENV})")
    password_env = str(table.get("password_env", ""))
    env_url = os.environ.get(URL_ENV)
    if env_url:
        return StoreSettings(
            url=checked_url(env_url, URL_ENV), password_env=password_env, source=URL_ENV
        )
    url = table.get("url")
    if not url:
        return StoreSettings(password_env=password_env)  # for `trellis store copy --to`
    source = f"{user}: store.url"
    return StoreSettings(
        url=checked_url(str(url), source), password_env=password_env, source=source
    )


def url_settings(url: str, source: str) -> StoreSettings:
    """A store named on a command line (`trellis store copy --to URL`, a `--store URL` option):
    the URL checked as a configured one, its password from the user config's `password_env` (or
    PGPASSFILE). `source` names the option in errors."""
    return StoreSettings(
        url=checked_url(url, source), password_env=store_settings().password_env, source=source
    )


def chosen_settings(url: str | None, cwd: Path, option: str = "--store") -> StoreSettings:
    """A command's store: `url` given on its command line as `option` (checked as a configured
    URL), else the configured store seen from `cwd`; raises `StoreConfigError` for either
    refused."""
    return url_settings(url, option) if url is not None else store_settings(cwd)


def project_store_refused(project: Path) -> StoreConfigError:
    return StoreConfigError(
        f"{project}: store: the session store is set in the user config only "
        f"({user_config_file()}) or by {URL_ENV}, never by a project"
    )


def store_table(layer: Mapping[str, Any], file: Path) -> Mapping[str, Any]:
    """The `[store]` table of a user config layer, checked key by key."""
    table = layer.get("store", {})
    if not isinstance(table, Mapping):
        raise StoreConfigError(f"{file}: store: must be a table")
    for key, value in table.items():
        if key not in _KEYS:
            raise StoreConfigError(
                f"{file}: store.{key}: unknown key; known keys: {', '.join(_KEYS)}"
            )
        if not isinstance(value, str):
            raise StoreConfigError(f"{file}: store.{key}: must be a string")
    if table.get("url"):
        checked_url(str(table["url"]), f"{file}: store.url")
    return table


def checked_url(url: str, source: str) -> str:
    """The URL to connect with; `StoreConfigError` naming `source` for anything refused."""
    shown = redacted_url(url)
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # the port, read for its check
    except ValueError as exc:
        raise StoreConfigError(f"{source}: {shown} is not a valid URL: {exc}") from None
    if parts.scheme not in SCHEMES:
        raise StoreConfigError(
            f"{source}: {shown}: expected a postgresql:// URL (or no URL: the SQLite store)"
        )
    if parts.password is not None:
        raise StoreConfigError(
            f"{source}: {shown} carries a password; take it out and put it in PGPASSFILE, "
            "or in an environment variable named by [store] password_env"
        )
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if "password" in query:
        raise StoreConfigError(f"{source}: {shown} carries a password parameter; take it out")
    hosts = (query.get("host") or host or "").split(",")
    if all(_is_local(h) for h in hosts):
        return url
    mode = query.get("sslmode")
    if mode not in (None, _TLS_MODE):
        raise StoreConfigError(
            f"{source}: {shown}: sslmode={mode} off loopback; a server on another host "
            f"is reached over TLS with its certificate verified (sslmode={_TLS_MODE})"
        )
    query["sslmode"] = _TLS_MODE
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


def _is_local(host: str | None) -> bool:
    """Loopback, or a Unix socket (no host, or a directory path as host)."""
    if not host or host.startswith("/") or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _table_of(file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
        if not text.strip():
            return {}  # an empty table, without importing the parser (start time)
        import tomllib

        return tomllib.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # TOMLDecodeError is a ValueError
        raise StoreConfigError(f"{file}: cannot read the config: {exc}") from exc
