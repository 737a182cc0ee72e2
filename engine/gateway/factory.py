"""A gateway from a named model entry of the config (`[models.NAME]`).

The entry is typed structurally (`ModelEntryLike`), so this module depends on the attributes it
reads and not on the config module. Keys are never read here: the gateway reads the variable
named by `api_key_env` at request time, so a key rotated in the environment takes effect and
never sits in a config object.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, assert_never

from engine.gateway.base import DEFAULT_TIMEOUT, Gateway, GatewayType
from engine.gateway.scripted import ScriptedGateway

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
    def script(self) -> str | None: ...


class UnknownProviderError(ValueError):
    """The entry names a provider no gateway speaks."""


def make_gateway(
    entry_name: str, entry: ModelEntryLike, *, script: str | Path | None = None
) -> Gateway:
    """The gateway for `entry`; `script` (e.g. `trellis run --script FILE`) overrides a scripted
    entry's own `script`.

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
    base_url = entry.base_url or ""
    key_env = entry.api_key_env or DEFAULT_API_KEY_ENV.get(provider, "")
    timeout = entry.timeout
    label = f"{provider.value} ({entry_name})"
    if provider is GatewayType.scripted:
        return ScriptedGateway.from_file(script_path) if script_path else ScriptedGateway()
    if provider is GatewayType.openai and not key_env and not base_url:
        key_env = "OPENAI_API_KEY"  # the real OpenAI endpoint; local servers need no key
    return _network_gateway(provider)(
        base_url=base_url,
        api_key_env=key_env,
        timeout=timeout or DEFAULT_TIMEOUT,
        provider_name=label,
    )


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
