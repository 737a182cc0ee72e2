"""Resume: a CoopContext over a replayed Context, with each recorded Area restored from its state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from engine.context.area import (
    Area,
    AreaLifeState,
    ContextAreaImplementation,
    RestorableArea,
)
from engine.context.coop_context import CoopContext, Sink
from engine.context.rebuilder import AreaRecord, RebuiltContext
from engine.message import Message


@dataclass(eq=False, slots=True)
class UnrestorableArea(Area):
    """Stands in for an Area that could not be restored: retired, so its component can go."""

    area_id: str
    kind: str
    reason: str
    name: str = field(default="")

    @property
    def life_state(self) -> AreaLifeState:
        return AreaLifeState.retired

    def render(self) -> list[Message]:
        return []


@dataclass(frozen=True, slots=True)
class Resumed:
    coop: CoopContext
    unrestored: tuple[UnrestorableArea, ...]  # reported by name to the user


def resume_coop_context(
    rebuilt: RebuiltContext,
    kinds: Mapping[str, type[RestorableArea]],
    *,
    sink: Sink | None = None,
) -> Resumed:
    """A CoopContext over the rebuilt Context with each recorded Area restored from its state.

    docs/spec/context-areas.md, "Resume": an Area that cannot be restored (unknown kind, no recorded
    state, restore() raised) is treated as retired from the resume on and reported.
    """
    coop = CoopContext(rebuilt.context, sink, first_serial=rebuilt.last_serial + 1)
    unrestored: list[UnrestorableArea] = []
    adopted: list[tuple[str, AreaRecord, ContextAreaImplementation]] = []
    for area_id, record in rebuilt.areas.items():
        area: ContextAreaImplementation
        cls = kinds.get(record.kind)
        try:
            if cls is None or record.state is None:
                raise LookupError(f"no restorable kind {record.kind!r} with a recorded state")
            area = _as_area(cls.restore(record.state))
        except Exception as exc:
            area = UnrestorableArea(
                area_id, record.kind, f"{type(exc).__name__}: {exc}", record.name
            )
            unrestored.append(area)
        adopted.append((area_id, record, area))
    for area_id, record, area in adopted:
        coop.adopt(area, area_id, reported=(record.life, record.flow), snapshot=record.state)
    # Ranges go in order of increasing latest, the order the Collector walks backward.
    ranged = [(record.range, area) for _, record, area in adopted if record.range is not None]
    for effect, area in sorted(ranged, key=lambda entry: entry[0].latest):
        coop.adopt_range(area, effect)
    if rebuilt.cursor is not None and rebuilt.cursor in rebuilt.areas:
        coop.set_cursor(rebuilt.cursor)
    # Retired from the resume on, in the log as well: a stand-in that was exclusive at the cursor
    # must not own what is appended after the resume (live and rebuilt ownership agree).
    for stand_in in unrestored:
        coop.report_state(stand_in)
    return Resumed(coop, tuple(unrestored))


def _as_area(value: object) -> ContextAreaImplementation:
    required = ("life_state", "flow_state", "observe", "render", "promote", "gc_prologue")
    missing = [name for name in required if not hasattr(value, name)]
    if missing:
        raise TypeError(f"restore() returned {type(value).__name__} without {', '.join(missing)}")
    return cast(ContextAreaImplementation, value)
