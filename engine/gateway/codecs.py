"""The native codec of each gateway type: one item per message, merging only in `serialize`.

Each codec is imported when its gateway type is first asked for: a session on one provider does
not load the others'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from engine.gateway.base import Codec, GatewayType
from engine.lazy_exports import lazy_exports

if TYPE_CHECKING:
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
            from engine.gateway.codec.scripted import ScriptedCodec

            return ScriptedCodec()
        case GatewayType.openai:
            from engine.gateway.codec.openai import OpenAICodec

            return OpenAICodec()
        case GatewayType.gemini:
            from engine.gateway.codec.gemini import GeminiCodec

            return GeminiCodec()
        case GatewayType.anthropic:
            from engine.gateway.codec.anthropic import AnthropicCodec

            return AnthropicCodec()
        case _:
            assert_never(gateway_type)


__getattr__ = lazy_exports(
    __name__,
    {
        "AnthropicCodec": "engine.gateway.codec.anthropic",
        "GeminiCodec": "engine.gateway.codec.gemini",
        "OpenAICodec": "engine.gateway.codec.openai",
        "ScriptedCodec": "engine.gateway.codec.scripted",
    },
)
