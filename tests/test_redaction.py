"""The one redactor: every spelling of every held secret, in any text and in `trellis.log`."""

from __future__ import annotations

import json
import logging

import pytest

from engine.agent.factory import held_secrets
from engine.config import Config, McpServer, ModelEntry
from engine.redaction import REDACTED, RedactingLogFilter, Redactor

KEY = "sk-live-abcdef0123"


def test_each_spelling_of_a_secret_is_replaced() -> None:
    odd = 'pa"ss\\wörd-42'
    redact = Redactor([odd])
    for spelling in (
        odd,
        json.dumps(odd)[1:-1],  # JSON, ASCII-escaped
        json.dumps(odd, ensure_ascii=False)[1:-1],
        repr(odd)[1:-1],
    ):
        assert redact(f"before {spelling} after") == f"before {REDACTED} after"


def test_a_secret_containing_another_is_replaced_whole() -> None:
    redact = Redactor(["abcdef", "abcdef-ghijkl"])
    assert redact("x abcdef-ghijkl y abcdef") == f"x {REDACTED} y {REDACTED}"


def test_short_and_empty_values_are_not_secrets() -> None:
    redact = Redactor(["1", "true", "", "debug"])
    assert not redact
    assert redact("debug is true, level 1") == "debug is true, level 1"


def test_with_secrets_widens_and_never_shows_values() -> None:
    base = Redactor([KEY])
    wider = base.with_secrets(None, "", "another-secret")
    assert wider("another-secret and " + KEY) == f"{REDACTED} and {REDACTED}"
    assert base("another-secret") == "another-secret"
    assert base.with_secrets(None) is base
    assert KEY not in repr(wider)


def test_held_secrets_are_model_keys_mcp_env_values_and_the_serve_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_KEY", "named-key-value")
    monkeypatch.setenv("GEMINI_API_KEY", "default-gemini-key")
    monkeypatch.setenv("TRELLIS_SERVE_TOKEN", "bridge-token-value")
    config = Config(
        models={
            "named": ModelEntry(provider="anthropic", api_key_env="MY_KEY"),
            "g": ModelEntry(provider="gemini"),  # reads GEMINI_API_KEY by default
        },
        mcp_servers=[McpServer(name="db", command="x", env={"PGPASSWORD": "db-password-1"})],
    )
    redact = held_secrets(config)
    text = "named-key-value default-gemini-key bridge-token-value db-password-1"
    assert redact(text) == " ".join([REDACTED] * 4)


def test_the_log_filter_redacts_message_arguments_traceback_and_stack() -> None:
    record = logging.LogRecord("engine", logging.ERROR, __file__, 1, "got %s", (KEY,), None)
    try:
        raise RuntimeError(f"endpoint said {KEY}")
    except RuntimeError as exc:
        record.exc_info = (type(exc), exc, exc.__traceback__)
    record.stack_info = f"stack with {KEY}"
    assert RedactingLogFilter(Redactor([KEY])).filter(record)
    line = logging.Formatter().format(record)
    assert KEY not in line
    assert f"got {REDACTED}" in line
    assert f"RuntimeError: endpoint said {REDACTED}" in line
    assert f"stack with {REDACTED}" in line
