"""The serve token and the upgrade gate (issue 13, item 7), decided without sockets."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from app.acp.auth import (
    TOKEN_META_KEY,
    TOKEN_METHOD_ID,
    TokenFileError,
    UpgradeGate,
    authenticate_first_message,
    bearer_token,
    load_token,
    token_matches,
)

ENV = "TRELLIS_SERVE_TOKEN"


@pytest.fixture(autouse=True)
def no_env_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)


def test_a_token_is_generated_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "data" / "serve-token"
    first = load_token(ENV, path)
    second = load_token(ENV, path)
    assert first.created
    assert not second.created
    assert first.value == second.value
    assert len(first.value) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert second.source == str(path)


def test_the_environment_wins_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "from-the-environment")
    token = load_token(ENV, tmp_path / "serve-token")
    assert (token.value, token.created) == ("from-the-environment", False)
    assert token.source == f"the environment variable {ENV}"
    assert not (tmp_path / "serve-token").exists()


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "serve-token"
    load_token(ENV, path)
    os.chmod(path, 0o644)
    with pytest.raises(TokenFileError, match="open to other users \\(mode 644\\)"):
        load_token(ENV, path)


def test_an_empty_token_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "serve-token"
    path.touch(mode=0o600)
    with pytest.raises(TokenFileError, match="is empty"):
        load_token(ENV, path)


def test_tokens_compare_whole() -> None:
    assert token_matches("secret-token", "secret-token")
    assert not token_matches("secret-token", "secret-toke")
    assert not token_matches("secret-token", "secret-token2")
    assert not token_matches("secret-token", None)


@pytest.mark.parametrize(
    ("values", "token"),
    [
        (["Bearer abc"], "abc"),
        (["bearer  abc "], "abc"),
        (["Basic abc"], None),
        (["Bearer "], None),
        (["Bearer abc", "Bearer abc"], None),
        ([], None),
    ],
)
def test_the_bearer_header(values: list[str], token: str | None) -> None:
    assert bearer_token(values) == token


GATE = UpgradeGate.of("tok", ["https://Editor.example/"])


@pytest.mark.parametrize(
    ("origins", "authorization", "query", "status"),
    [
        ([], ["Bearer tok"], "", None),
        ([], ["Bearer nope"], "", 401),
        ([], [], "", 401),
        ([], [], "auth=message", None),
        ([], ["Bearer nope"], "auth=message", 401),  # a header given is judged as given
        (["https://editor.example"], ["Bearer tok"], "", None),
        (["https://evil.example"], ["Bearer tok"], "", 403),
        (["https://evil.example"], [], "", 403),  # the Origin is judged before the token
        (["null"], ["Bearer tok"], "", 403),
        (["https://editor.example", "https://editor.example"], ["Bearer tok"], "", 403),
    ],
)
def test_the_upgrade_gate(
    origins: list[str], authorization: list[str], query: str, status: int | None
) -> None:
    refusal = GATE.check(origins=origins, authorization=authorization, query=query)
    assert (refusal.status.value if refusal else None) == status


def authenticate(params: object, ident: object = 1, method: str = "authenticate") -> str:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})


def test_a_first_message_with_the_token_is_accepted() -> None:
    text = authenticate({"methodId": TOKEN_METHOD_ID, "_meta": {TOKEN_META_KEY: "tok"}}, 5)
    outcome = authenticate_first_message("tok", text)
    assert outcome.accepted
    assert json.loads(outcome.answer) == {"jsonrpc": "2.0", "id": 5, "result": {}}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (authenticate({"methodId": TOKEN_METHOD_ID, "_meta": {TOKEN_META_KEY: "nope"}}), "wrong"),
        (authenticate({"methodId": "other", "_meta": {TOKEN_META_KEY: "tok"}}), "methodId"),
        (authenticate({"methodId": TOKEN_METHOD_ID}), "methodId"),
        (authenticate({"_meta": {TOKEN_META_KEY: "tok"}}), "needs params"),
        (authenticate({}, method="initialize"), "must be an `authenticate`"),
        (authenticate({"methodId": TOKEN_METHOD_ID}, ident=None), "must be an `authenticate`"),
        ("[1, 2]", "not a JSON-RPC request"),
        ("{oops", "not a JSON-RPC request"),
    ],
)
def test_a_first_message_without_the_token_is_refused_with_why(text: str, why: str) -> None:
    outcome = authenticate_first_message("tok", text)
    assert not outcome.accepted
    error = json.loads(outcome.answer)["error"]
    assert error["code"] == -32000
    assert why in error["data"]["reason"]
