"""The real `trellis run` against a hostile endpoint on 127.0.0.1 (issue 9, items 4 and 5).

Each case must end: a deadline expiry is retried (a `retry` event) and then ends the turn `error`
naming the deadline and its value; whatever the endpoint sends, the API key appears nowhere in the
stored events, on stdout or stderr, or in `trellis.log`. Deadlines are fractions of a second; no
assertion is made on time.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.events import Event, Retry, TurnEnd
from engine.store.sqlite.store import SQLiteStore
from tests.agent.harness import CliRun, payloads, trellis
from tests.gateway.fake_http import Canned, FakeServer, sse

KEY_ENV = "HOSTILE_ENDPOINT_KEY"
KEY = "sk-hostile-5f3a9c0e7d21"
KEEPALIVE = b": keep-alive\n\n"
PARTIAL = sse({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]})
DEADLINE = 0.3


@dataclass(frozen=True, slots=True)
class Case:
    """What the endpoint answers each attempt, and how the turn must end."""

    answer: Canned
    retries: int  # `retry` events expected (the entry allows one)
    message: str  # a fragment of the turn's end message


CASES = {
    "garbage": Case(Canned(trickle=b"\x00garbage, not a field\n"), 1, "first_event_timeout = 0.3"),
    "keep-alive forever": Case(
        Canned(chunks=[KEEPALIVE], trickle=KEEPALIVE), 1, "first_event_timeout = 0.3"
    ),
    "key in an error event": Case(
        Canned(chunks=sse({"error": {"message": f"bad key {KEY}", "code": 503}})),
        1,
        "error in stream: bad key [redacted]",
    ),
    "key in a malformed line": Case(
        Canned(chunks=[*PARTIAL, f"data: echo {KEY}\n\n".encode()]),
        0,
        "malformed stream",
    ),
    "stall mid-stream": Case(Canned(chunks=PARTIAL, stall=True), 1, "idle_timeout = 0.3"),
}


@pytest.fixture
async def server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeServer]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)  # the child must reach 127.0.0.1 directly
    monkeypatch.setenv(KEY_ENV, KEY)
    fake = FakeServer()
    await fake.start()
    yield fake
    await fake.aclose()


def config_for(server: FakeServer, path: Path) -> Path:
    path.write_text(
        'default_model = "hostile"\n'
        "[models.hostile]\n"
        'provider = "openai"\n'
        'model = "m"\n'
        f'base_url = "{server.base_url}"\n'
        f'api_key_env = "{KEY_ENV}"\n'
        f"first_event_timeout = {DEADLINE}\n"
        f"idle_timeout = {DEADLINE}\n"
        "request_timeout = 30.0\n"
        "max_retries = 1\n"
    )
    return path


async def stored(home: Path, stderr: str) -> tuple[Event, ...]:
    found = re.search(r"\[session (\w+)\]", stderr)
    assert found is not None, stderr
    async with SQLiteStore(home / "sessions.sqlite") as store:
        return (await store.inspect(found.group(1))).events


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_a_hostile_endpoint_ends_the_turn_and_never_shows_the_key(
    server: FakeServer, tmp_path: Path, case: Case
) -> None:
    server.queue(*[case.answer] * (case.retries + 1))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    config = config_for(server, tmp_path / "config.toml")
    done: CliRun = await asyncio.to_thread(
        trellis, ["run", "-p", "hello"], home=home, config=config, cwd=workspace
    )

    assert done.code == 1, done.stderr
    assert len(server.seen) == case.retries + 1
    assert server.seen[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent the key
    events = await stored(home, done.stderr)
    retries = payloads(events, Retry)
    assert [r.attempt for r in retries] == list(range(1, case.retries + 1))
    (end,) = payloads(events, TurnEnd)
    assert end.reason == "error"
    assert case.message in end.message
    assert f"trellis: turn ended (error): {end.message}" in done.stderr

    log = (home / "trellis.log").read_text()
    assert "model call failed" in log
    for where, text in {
        "stored events": json.dumps([e.model_dump(mode="json") for e in events]),
        "stdout": done.stdout,
        "stderr": done.stderr,
        "trellis.log": log,
    }.items():
        assert KEY not in text, where
