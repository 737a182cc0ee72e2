"""Local servers: which are asked, what their `/v1/models` answers become, and how a server that is
absent, silent or something else is told apart, always against a test's own server."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from engine.config import ConfigError
from engine.local_servers import (
    SERVERS_ENV,
    WELL_KNOWN,
    LocalModel,
    LocalServer,
    ask,
    local_servers,
    model_list,
)
from tests.local_model_server import ModelListServer, SilentPort, closed_port


def test_the_well_known_servers_and_which_are_asked_at_start() -> None:
    assert local_servers({}) == WELL_KNOWN
    assert [(s.name, s.port, s.at_start) for s in WELL_KNOWN] == [
        ("ollama", 11434, True),
        ("lmstudio", 1234, True),
        ("llamacpp", 8080, False),
        ("vllm", 8000, False),
    ]
    assert all(s.host == "127.0.0.1" for s in WELL_KNOWN)
    assert WELL_KNOWN[0].base_url == "http://127.0.0.1:11434/v1"


def test_the_environment_names_the_servers_instead() -> None:
    named = local_servers({SERVERS_ENV: "ollama=11500, mine=9001"})
    assert [(s.name, s.label, s.port, s.host) for s in named] == [
        ("ollama", "Ollama", 11500, "127.0.0.1"),
        ("mine", "mine", 9001, "127.0.0.1"),
    ]
    assert local_servers({SERVERS_ENV: ""}) == ()


@pytest.mark.parametrize("value", ["ollama", "ollama=x", "Big=1", "a=0", "a=70000", "a=1,a=2"])
def test_a_bad_server_list_is_a_config_error(value: str) -> None:
    with pytest.raises(ConfigError, match=SERVERS_ENV):
        local_servers({SERVERS_ENV: value})


def test_a_model_list_keeps_chat_models_and_the_window_a_server_gives() -> None:
    body = {
        "object": "list",
        "data": [
            {"id": "qwen3:8b"},
            {"id": "nomic-embed-text"},
            {"id": "Qwen/Qwen3-8B", "max_model_len": 32768},
            {"id": ""},
            "junk",
            {"id": "x", "context_length": True},
        ],
    }
    assert model_list(json.dumps(body).encode()) == (
        LocalModel(id="qwen3:8b"),
        LocalModel(id="Qwen/Qwen3-8B", context_window=32768),
        LocalModel(id="x"),
    )
    assert model_list(b"<html>") is None
    assert model_list(b'{"models": []}') is None
    assert model_list(b"[]") is None


async def test_a_running_server_lists_its_models() -> None:
    with ModelListServer(["qwen3:8b", {"id": "llama3.2", "max_model_len": 8192}]) as running:
        (answer,) = await ask([running.server()])
    assert answer.problem is None
    assert answer.models == (
        LocalModel(id="qwen3:8b"),
        LocalModel(id="llama3.2", context_window=8192),
    )
    assert running.paths == ["/v1/models"]
    assert answer.describe() == f"ollama at 127.0.0.1:{running.port}: 2 models"


async def test_absent_silent_and_other_servers_are_told_apart() -> None:
    absent = LocalServer(name="vllm", label="vLLM", port=closed_port())
    with (
        SilentPort() as silent,
        ModelListServer(status=500) as failing,
        ModelListServer(body=b"<html>hello</html>") as other,
    ):
        answers = await ask(
            [absent, silent.server(), failing.server("a"), other.server("b")], deadline=0.3
        )
    assert [a.problem for a in answers] == [
        "not running (connection refused)",
        "no answer within 0.3 s",
        "answered HTTP 500",
        "answered with no model list",
    ]
    assert all(a.models == () for a in answers)


async def test_servers_are_asked_at_once() -> None:
    """Four silent servers cost one deadline, not four."""
    with SilentPort() as a, SilentPort() as b, SilentPort() as c, SilentPort() as d:
        servers = [a.server("a"), b.server("b"), c.server("c"), d.server("d")]
        started = time.monotonic()
        answers = await ask(servers, deadline=1.0)
        elapsed = time.monotonic() - started
    assert len(answers) == 4
    assert elapsed < 3.5  # asked one after another they would take 4 s


async def test_asking_is_cancellable() -> None:
    with SilentPort() as silent:
        task = asyncio.create_task(ask([silent.server()], deadline=30.0))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=5.0)


async def test_no_server_asks_nothing() -> None:
    assert await ask([]) == ()
