"""The native codec of each gateway type: one item per message, merging only in `serialize`."""

from __future__ import annotations

from typing import assert_never

from engine.gateway.base import Codec, GatewayType
from engine.gateway.codec.anthropic import AnthropicCodec
from engine.gateway.codec.gemini import GeminiCodec
from engine.gateway.codec.openai import OpenAICodec
from engine.gateway.codec.scripted import ScriptedCodec

__all__ = ["AnthropicCodec", "GeminiCodec", "OpenAICodec", "ScriptedCodec", "codec_for"]

_CODECS: dict[GatewayType, Codec] = {}


def codec_for(gateway_type: GatewayType) -> Codec:
    """The (stateless, shared) codec of a gateway type."""
    codec = _CODECS.get(gateway_type)
    if codec is None:
        codec = _CODECS[gateway_type] = _make(gateway_type)
    return codec


def _make(gateway_type: GatewayType) -> Codec:
    match gateway_type:
        case GatewayType.scripted:
            return ScriptedCodec()
        case GatewayType.openai:
            return OpenAICodec()
        case GatewayType.gemini:
            return GeminiCodec()
        case GatewayType.anthropic:
            return AnthropicCodec()
        case _:
            assert_never(gateway_type)
