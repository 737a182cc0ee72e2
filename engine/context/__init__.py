"""The working Context and the cooperative Areas that render into it (spec/context-areas.md)."""

from engine.context.area import (
    AreaFlowState,
    AreaLifeState,
    ContextAreaImplementation,
    EffectRange,
    RestorableArea,
)
from engine.context.context import Context
from engine.context.coop_context import CoopContext, Sink
from engine.context.errors import AreaCallbackError, AreaRegistrationError
from engine.context.provenance import ItemKind, Provenance
from engine.context.rebuild import emplace_event, message_provenance, user_message_text
from engine.context.replayer import (
    AreaRecord,
    ContextReplayer,
    RebuiltContext,
    ReplayMark,
    rebuild_context,
)
from engine.context.resume import Resumed, UnrestorableArea, resume_coop_context
from engine.gateway.base import NativeContent

__all__ = [
    "AreaCallbackError",
    "AreaFlowState",
    "AreaLifeState",
    "AreaRecord",
    "AreaRegistrationError",
    "Context",
    "ContextAreaImplementation",
    "ContextReplayer",
    "CoopContext",
    "EffectRange",
    "ItemKind",
    "NativeContent",
    "Provenance",
    "RebuiltContext",
    "ReplayMark",
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
