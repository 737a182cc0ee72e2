"""A gateway from a named model entry of the config (`[models.NAME]`).

The entry is typed structurally (`ModelEntryLike`), so this module depends on the attributes it
reads and not on the config module. Keys are never read here: the gateway reads the variable
named by `api_key_env` at request time, so a key rotated in the environment takes effect and
never sits in a config object.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, assert_never

from engine.gateway.base import DEFAULT_TIMEOUT, Gateway, GatewayType
from engine.gateway.deadlines import StreamDeadlines
from engine.gateway.scripted import ScriptedGateway
from engine.redaction import Redactor

if TYPE_CHECKING:
    from engine.gateway.http import HttpGateway

DEFAULT_API_KEY_ENV: dict[GatewayType, str] = {
    GatewayType.gemini: "GEMINI_API_KEY",
    GatewayType.anthropic: "ANTHROPIC_API_KEY",
}
"""The variable read when an entry names none; `openai` uses `OPENAI_API_KEY` only for its default
base URL, since local OpenAI-compatible servers (Ollama, llama.cpp, vLLM) need no key."""


class ModelEntryLike(Protocol):
    """The attributes of a config model entry that a gateway needs."""

    @property
    def provider(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def api_key_env(self) -> str | None: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def first_event_timeout(self) -> float | None: ...
    @property
    def idle_timeout(self) -> float | None: ...
    @property
    def request_timeout(self) -> float | None: ...
    @property
    def script(self) -> str | None: ...
    @property
    def cache_min_tokens(self) -> int: ...


class UnknownProviderError(ValueError):
    """The entry names a provider no gateway speaks."""


def api_key_env_of(entry: ModelEntryLike) -> str:
    """The variable whose value the entry's gateway sends as its key; "" when it sends none."""
    try:
        provider = GatewayType(entry.provider)
    except ValueError:
        return entry.api_key_env or ""
    key_env = entry.api_key_env or DEFAULT_API_KEY_ENV.get(provider, "")
    if provider is GatewayType.openai and not key_env and not entry.base_url:
        return "OPENAI_API_KEY"  # the real OpenAI endpoint; local servers need no key
    return key_env


def deadlines_of(entry: ModelEntryLike) -> StreamDeadlines:
    """The entry's stream deadlines; a value it leaves unset keeps the default."""
    default = StreamDeadlines()
    return StreamDeadlines(
        first_event=entry.first_event_timeout or default.first_event,
        idle=entry.idle_timeout or default.idle,
        request=entry.request_timeout or default.request,
    )


def make_gateway(
    entry_name: str,
    entry: ModelEntryLike,
    *,
    script: str | Path | None = None,
    redactor: Redactor | None = None,
) -> Gateway:
    """The gateway for `entry`; `script` (e.g. `trellis run --script FILE`) overrides a scripted
    entry's own `script`; `redactor` holds the secrets no error of the gateway may show.

    Raises `UnknownProviderError` for an unknown provider, `ScriptError` for a bad script file, and
    `ValueError` when a script is given for a network provider.
    """
    try:
        provider = GatewayType(entry.provider)
    except ValueError:
        known = ", ".join(t.value for t in GatewayType)
        raise UnknownProviderError(
            f"model {entry_name!r}: unknown provider {entry.provider!r} (expected one of {known})"
        ) from None
    script_path = script if script is not None else entry.script
    if script_path and provider is not GatewayType.scripted:
        raise ValueError(
            f"model {entry_name!r}: a script plays only on the scripted provider, not {provider.value}"
        )
    if provider is GatewayType.scripted:
        if not script_path:
            return ScriptedGateway()
        from engine.gateway.script_file import load_script

        return ScriptedGateway(load_script(script_path))
    if provider is GatewayType.anthropic:
        from engine.gateway.anthropic import AnthropicGateway

        return AnthropicGateway(
            **_http_settings(entry_name, entry, provider, redactor),
            cache_min_tokens=entry.cache_min_tokens,
        )
    return _network_gateway(provider)(**_http_settings(entry_name, entry, provider, redactor))


def _http_settings(
    entry_name: str, entry: ModelEntryLike, provider: GatewayType, redactor: Redactor | None
) -> dict[str, Any]:
    """What every network gateway is made with."""
    return {
        "base_url": entry.base_url or "",
        "api_key_env": api_key_env_of(entry),
        "timeout": entry.timeout or DEFAULT_TIMEOUT,
        "deadlines": deadlines_of(entry),
        "redactor": redactor,
        "provider_name": f"{provider.value} ({entry_name})",
    }


def _network_gateway(provider: GatewayType) -> type[HttpGateway]:
    """The class for a network provider, imported when picked: a scripted start never loads httpx."""
    match provider:
        case GatewayType.openai:
            from engine.gateway.openai import OpenAIGateway

            return OpenAIGateway
        case GatewayType.gemini:
            from engine.gateway.gemini import GeminiGateway

            return GeminiGateway
        case GatewayType.anthropic:
            from engine.gateway.anthropic import AnthropicGateway

            return AnthropicGateway
        case GatewayType.scripted:
            raise ValueError("the scripted gateway is not a network gateway")
        case _:
            assert_never(provider)
