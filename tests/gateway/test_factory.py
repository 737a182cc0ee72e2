"""`make_gateway`: a config entry to the gateway that speaks its provider."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.gateway.anthropic import AnthropicGateway
from engine.gateway.base import GatewayType, ModelRequest, TextDelta
from engine.gateway.factory import UnknownProviderError, make_gateway
from engine.gateway.gemini import GeminiGateway
from engine.gateway.openai import OpenAIGateway
from engine.gateway.scripted import ScriptedGateway, ScriptError
from tests.gateway.fake_http import Canned, FakeServer, sse


@dataclass(frozen=True)
class Entry:
    """Stands in for the config's `ModelEntry`: the factory reads only these attributes."""

    provider: str
    model: str = "m"
    base_url: str | None = None
    api_key_env: str | None = None
    timeout: float | None = None
    first_event_timeout: float | None = None
    idle_timeout: float | None = None
    request_timeout: float | None = None
    script: str | None = None
    cache_min_tokens: int = 1024


def test_scripted_entry_without_and_with_a_script(tmp_path: Path) -> None:
    assert isinstance(make_gateway("default", Entry("scripted")), ScriptedGateway)
    path = tmp_path / "s.json"
    path.write_text('[{"text": "from file"}]')
    from_entry = make_gateway("demo", Entry("scripted", script=str(path)))
    assert isinstance(from_entry, ScriptedGateway)
    assert from_entry.remaining == 1
    other = tmp_path / "t.json"
    other.write_text('[{"text": "a"}, {"text": "b"}]')
    overridden = make_gateway("demo", Entry("scripted", script=str(path)), script=other)
    assert isinstance(overridden, ScriptedGateway)
    assert overridden.remaining == 2


def test_a_bad_script_raises_a_script_error(tmp_path: Path) -> None:
    with pytest.raises(ScriptError):
        make_gateway("demo", Entry("scripted"), script=tmp_path / "missing.json")


async def test_network_entries_get_their_gateway_and_defaults() -> None:
    openai = make_gateway("gpt", Entry("openai"))
    gemini = make_gateway("g", Entry("gemini"))
    anthropic = make_gateway("c", Entry("anthropic", api_key_env="MY_KEY"))
    try:
        assert isinstance(openai, OpenAIGateway)
        assert isinstance(gemini, GeminiGateway)
        assert isinstance(anthropic, AnthropicGateway)
        assert [g.gateway_type for g in (openai, gemini, anthropic)] == [
            GatewayType.openai,
            GatewayType.gemini,
            GatewayType.anthropic,
        ]
        assert "https://api.openai.com/v1" in repr(openai.__dict__)
        assert "OPENAI_API_KEY" in repr(openai.__dict__)
        assert "https://generativelanguage.googleapis.com/v1beta" in repr(gemini.__dict__)
        assert "GEMINI_API_KEY" in repr(gemini.__dict__)
        assert "https://api.anthropic.com/v1" in repr(anthropic.__dict__)
        assert "MY_KEY" in repr(anthropic.__dict__)
    finally:
        for gateway in (openai, gemini, anthropic):
            await gateway.aclose()


async def test_a_local_openai_server_needs_no_key(server: FakeServer) -> None:
    gateway = make_gateway("local", Entry("openai", base_url=server.base_url, timeout=5))
    server.queue(
        Canned(
            chunks=sse(
                {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}
            )
        )
    )
    try:
        deltas = [d async for d in gateway.stream(ModelRequest(model="qwen3:8b"))]
    finally:
        await gateway.aclose()
    assert deltas[0] == TextDelta("ok")
    assert "authorization" not in server.seen[0].headers


def test_unknown_provider_and_misplaced_script_are_refused() -> None:
    with pytest.raises(UnknownProviderError, match=r"model 'x': unknown provider 'mistral'"):
        make_gateway("x", Entry("mistral"))
    with pytest.raises(ValueError, match="only on the scripted provider"):
        make_gateway("x", Entry("openai"), script="s.json")
