"""Model gateways: the contract (`base`), the embedded scripted model, and the network providers.

The network gateways import `httpx`; they are loaded on first use of their names here, so code
that only needs the contract or the scripted model (the TUI's startup, most tests) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.gateway.base import (
    Codec,
    FinishDelta,
    Gateway,
    GatewayError,
    GatewayType,
    ModelRequest,
    NativeContent,
    ProviderStateDelta,
    ReasoningDelta,
    StreamDelta,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    UsageDelta,
)
from engine.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from engine.gateway.anthropic import AnthropicGateway
    from engine.gateway.factory import ModelEntryLike, UnknownProviderError, make_gateway
    from engine.gateway.gemini import GeminiGateway
    from engine.gateway.openai import OpenAIGateway
    from engine.gateway.script_file import load_script
    from engine.gateway.scripted import Reply, ScriptedGateway, ScriptError

__all__ = [
    "AnthropicGateway",
    "Codec",
    "FinishDelta",
    "Gateway",
    "GatewayError",
    "GatewayType",
    "GeminiGateway",
    "ModelEntryLike",
    "ModelRequest",
    "NativeContent",
    "OpenAIGateway",
    "ProviderStateDelta",
    "ReasoningDelta",
    "Reply",
    "ScriptError",
    "ScriptedGateway",
    "StreamDelta",
    "TextDelta",
    "ToolCallDelta",
    "ToolSpec",
    "UnknownProviderError",
    "UsageDelta",
    "load_script",
    "make_gateway",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "AnthropicGateway": "engine.gateway.anthropic",
        "GeminiGateway": "engine.gateway.gemini",
        "OpenAIGateway": "engine.gateway.openai",
        "ModelEntryLike": "engine.gateway.factory",
        "UnknownProviderError": "engine.gateway.factory",
        "make_gateway": "engine.gateway.factory",
        "Reply": "engine.gateway.scripted",
        "ScriptError": "engine.gateway.scripted",
        "ScriptedGateway": "engine.gateway.scripted",
        "load_script": "engine.gateway.script_file",
    },
)
