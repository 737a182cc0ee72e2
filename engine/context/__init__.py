"""The working Context and the Areas that render into it (docs/spec/context-areas.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from engine.context.area import (
        Area,
        AreaFlowState,
        AreaLifeState,
        ContextAreaImplementation,
        EffectRange,
        RestorableArea,
    )
    from engine.context.context import Context
    from engine.context.coop_context import CoopContext, Sink
    from engine.context.errors import AreaCallbackError, AreaRegistrationError
    from engine.context.log_items import emplace_event, message_provenance, user_message_text
    from engine.context.provenance import ItemKind, Provenance
    from engine.context.rebuilder import (
        AreaRecord,
        ContextRebuilder,
        RebuildMark,
        RebuiltContext,
        rebuild_context,
    )
    from engine.context.resume import Resumed, UnrestorableArea, resume_coop_context
    from engine.gateway.base import NativeContent

__all__ = [
    "Area",
    "AreaCallbackError",
    "AreaFlowState",
    "AreaLifeState",
    "AreaRecord",
    "AreaRegistrationError",
    "Context",
    "ContextAreaImplementation",
    "ContextRebuilder",
    "CoopContext",
    "EffectRange",
    "ItemKind",
    "NativeContent",
    "Provenance",
    "RebuildMark",
    "RebuiltContext",
    "RestorableArea",
    "Resumed",
    "Sink",
    "UnrestorableArea",
    "emplace_event",
    "message_provenance",
    "rebuild_context",
    "resume_coop_context",
    "user_message_text",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "Area": "engine.context.area",
        "AreaCallbackError": "engine.context.errors",
        "AreaFlowState": "engine.context.area",
        "AreaLifeState": "engine.context.area",
        "AreaRecord": "engine.context.rebuilder",
        "AreaRegistrationError": "engine.context.errors",
        "Context": "engine.context.context",
        "ContextAreaImplementation": "engine.context.area",
        "ContextRebuilder": "engine.context.rebuilder",
        "CoopContext": "engine.context.coop_context",
        "EffectRange": "engine.context.area",
        "ItemKind": "engine.context.provenance",
        "NativeContent": "engine.gateway.base",
        "Provenance": "engine.context.provenance",
        "RebuiltContext": "engine.context.rebuilder",
        "RebuildMark": "engine.context.rebuilder",
        "RestorableArea": "engine.context.area",
        "Resumed": "engine.context.resume",
        "Sink": "engine.context.coop_context",
        "UnrestorableArea": "engine.context.resume",
        "emplace_event": "engine.context.log_items",
        "message_provenance": "engine.context.log_items",
        "rebuild_context": "engine.context.rebuilder",
        "resume_coop_context": "engine.context.resume",
        "user_message_text": "engine.context.log_items",
    },
)
