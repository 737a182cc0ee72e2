"""The Area contract (docs/spec/context-areas.md): states, the protocol, the effect range."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, Self, TypeGuard, runtime_checkable

from engine.gateway.base import NativeContent
from engine.message import Message
from engine.privacy import PrivatizationLabel


class AreaLifeState(StrEnum):
    """spec: retain -> retired -> removed; retirement is irreversible."""

    retain = "retain"
    retired = "retired"


class AreaFlowState(StrEnum):
    """spec: exclusive keeps the cursor and returns; yielded advances it."""

    exclusive = "exclusive"
    yielded = "yielded"


class ContextAreaImplementation(Protocol):
    """The structural contract of an Area; nothing to inherit, nothing to decorate."""

    @property
    def life_state(self) -> AreaLifeState: ...

    @property
    def flow_state(self) -> AreaFlowState: ...

    def observe(self, context: Sequence[NativeContent]) -> None: ...

    def render(self) -> list[Message]: ...

    def promote(self) -> tuple[Message, ...]: ...

    def gc_prologue(self) -> None: ...


class Area:
    """The defaults most Areas share: yielded, blind to the Context, promoting nothing, nothing
    to release. Inherit it to write only what differs (the protocol stays structural)."""

    __slots__ = ()

    @property
    def flow_state(self) -> AreaFlowState:
        return AreaFlowState.yielded

    def observe(self, context: Sequence[NativeContent]) -> None:
        _ = context

    def promote(self) -> tuple[Message, ...]:
        return ()

    def gc_prologue(self) -> None:
        pass


@runtime_checkable
class RestorableArea(Protocol):
    """The optional members: an Area that has them is rebuilt on resume from its recorded state."""

    @property
    def kind(self) -> str: ...

    def snapshot(self) -> dict[str, Any]: ...

    @classmethod
    def restore(cls, state: dict[str, Any]) -> Self: ...


def is_restorable(area: object) -> TypeGuard[RestorableArea]:
    """The cheap structural check (`isinstance` on a runtime Protocol is slow per call)."""
    return (
        isinstance(getattr(area, "kind", None), str)
        and callable(getattr(area, "snapshot", None))
        and callable(getattr(type(area), "restore", None))
    )


@runtime_checkable
class LabelledArea(Protocol):
    """The optional privacy label of what an Area renders (default: internal, its producer's
    class). A watch on a secret file is restricted, so the egress gate sees it."""

    @property
    def label(self) -> PrivatizationLabel: ...


RetirementNotice = Callable[[ContextAreaImplementation], None]
"""Called by an Area with itself when it retires."""


class RetirementNotifyingArea(Protocol):
    """The optional retirement notice: CoopContext hands it over at registration, and the Area
    promises to call `notice(self)` whenever it retires. Such an Area, until it renders, is not
    read at every collection: a never-rendered Area otherwise must be, since it may retire between
    renders (a tool, a command) and is removed at the next collection."""

    def subscribe_retirement(self, notice: RetirementNotice) -> None: ...


@dataclass(frozen=True, slots=True)
class EffectRange:
    """An Area's positional influence over the Context: a closed interval of indices."""

    earliest: int
    latest: int

    def __post_init__(self) -> None:
        if not 0 <= self.earliest <= self.latest:
            raise ValueError(f"invalid effect range [{self.earliest}, {self.latest}]")

    def overlaps(self, other: EffectRange) -> bool:
        """Closed intervals: sharing an index (touching) counts."""
        return self.earliest <= other.latest and other.earliest <= self.latest

    def extended_to(self, latest: int) -> EffectRange:
        return EffectRange(self.earliest, latest)

    def shifted(self, by: int) -> EffectRange:
        """The same items after a compaction moved them by `by` positions."""
        return EffectRange(self.earliest + by, self.latest + by)
