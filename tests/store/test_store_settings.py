"""Which store holds the sessions: user config only, no password in a URL, verified TLS off
loopback, and connection strings shown redacted."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import ConfigError, load_config
from engine.redaction import redacted_url
from engine.store.chooser import open_store
from engine.store.errors import StoreConfigError
from engine.store.postgres.store import PostgresStore
from engine.store.settings import URL_ENV, checked_url, store_settings
from engine.store.sqlite.store import SQLiteStore


@pytest.fixture
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    file = tmp_path / "config.toml"
    monkeypatch.setenv("TRELLIS_CONFIG", str(file))
    monkeypatch.delenv(URL_ENV, raising=False)
    return file


def test_no_url_is_the_sqlite_store(user_config: Path, tmp_path: Path) -> None:
    user_config.write_text("", encoding="utf-8")
    settings = store_settings(tmp_path)
    assert settings.url is None
    assert isinstance(open_store(settings, path=tmp_path / "s.sqlite"), SQLiteStore)


def test_the_user_config_names_a_postgresql_store(user_config: Path, tmp_path: Path) -> None:
    user_config.write_text(
        '[store]\nurl = "postgresql://me@127.0.0.1:5432/trellis"\npassword_env = "PGPW"\n',
        encoding="utf-8",
    )
    settings = store_settings(tmp_path)
    assert (settings.url, settings.password_env) == (
        "postgresql://me@127.0.0.1:5432/trellis",
        "PGPW",
    )
    with pytest.raises(StoreConfigError, match="password_env names PGPW, which is not set"):
        open_store(settings)
    load_config(tmp_path)  # the rest of the config still validates


def test_the_environment_wins(
    user_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_config.write_text('[store]\nurl = "postgresql://a@127.0.0.1/x"\n', encoding="utf-8")
    monkeypatch.setenv(URL_ENV, "postgresql://b@127.0.0.1/y")
    settings = store_settings(tmp_path)
    assert settings.url == "postgresql://b@127.0.0.1/y"
    assert isinstance(open_store(settings), PostgresStore)


def test_a_project_config_may_not_name_the_store(user_config: Path, tmp_path: Path) -> None:
    user_config.write_text("", encoding="utf-8")
    project = tmp_path / "proj"
    (project / ".trellis").mkdir(parents=True)
    (project / ".trellis" / "config.toml").write_text(
        '[store]\nurl = "postgresql://evil@127.0.0.1/x"\n', encoding="utf-8"
    )
    with pytest.raises(StoreConfigError, match=r"config.toml: store: .*user config only"):
        store_settings(project)
    with pytest.raises(ConfigError, match=r"store: .*user config only"):
        load_config(project, trust_project=True)  # trusted or not


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("postgresql://me:hunter22@127.0.0.1/db", "carries a password"),
        ("postgresql://me@127.0.0.1/db?password=hunter22", "password parameter"),
        ("mysql://me@127.0.0.1/db", "expected a postgresql:// URL"),
        ("postgresql://me@db.example.com/db?sslmode=require", "sslmode=require off loopback"),
        ("postgresql://me@db.example.com/db?sslmode=disable", "verify-full"),
    ],
)
def test_refused_urls_never_show_the_password(url: str, problem: str) -> None:
    with pytest.raises(StoreConfigError, match=problem) as refused:
        checked_url(url, "--to")
    assert "hunter22" not in str(refused.value)


def test_off_loopback_tls_with_verification_is_required() -> None:
    assert (
        checked_url("postgresql://me@db.example.com/db", "x")
        == "postgresql://me@db.example.com/db?sslmode=verify-full"
    )
    assert checked_url("postgresql://me@[::1]:5432/db", "x") == "postgresql://me@[::1]:5432/db"
    assert checked_url("postgresql://me@localhost/db", "x") == "postgresql://me@localhost/db"


def test_a_user_config_store_table_is_checked(user_config: Path, tmp_path: Path) -> None:
    user_config.write_text('[store]\nurl = "postgresql://me@127.0.0.1/db"\nhost = "x"\n')
    with pytest.raises(StoreConfigError, match=r"store.host: unknown key"):
        store_settings(tmp_path)
    with pytest.raises(ConfigError, match=r"store.host: unknown key"):
        load_config(tmp_path)


def test_redacted_url() -> None:
    assert redacted_url("postgresql://me:s3cret!x@h:5/db") == "postgresql://me:[redacted]@h:5/db"
    assert "s3cret" not in redacted_url("postgresql://me@h/db?password=s3cret&x=1")
    assert redacted_url("postgresql://me@h/db") == "postgresql://me@h/db"
