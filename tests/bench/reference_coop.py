"""The BASELINE of tests/bench/context.py: the spec's reference CoopContext algorithm, not Trellis.

Written from the spec alone (docs/spec/context-areas.md without the Trellis parts), as plainly as
the spec describes it: Areas in a list, a cursor index, an `Area -> EffectRange` dict kept in the
order of `latest` (an Area that renders is re-inserted), a Collector that follows overlaps backward
from the last range, the collected Areas filtered out of the list in one pass (linear, as Trellis
is). Plus the one rule Trellis adds that the benchmark exercises: an Area that retires without ever
rendering is removed at the next collection. No events, ownership, labels or error wrapping: it is
the least a spec-conforming render must do, so Trellis is measured against it on the same Areas.
Each observe() gets a fresh snapshot of the range, as the spec words it.
"""

from __future__ import annotations

from engine.context import (
    AreaFlowState,
    AreaLifeState,
    Context,
    ContextAreaImplementation,
    EffectRange,
    ItemKind,
    NativeContent,
    Provenance,
)

RENDERED = Provenance(kind=ItemKind.area)
PROMOTED = Provenance(kind=ItemKind.promoted)


class ReferenceCoopContext:
    """The spec's algorithm: collect at the start of render(), then one pass from the cursor."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.areas: list[ContextAreaImplementation] = []
        self.ranges: dict[ContextAreaImplementation, EffectRange] = {}
        self.cursor = 0
        self.garbage: list[NativeContent] = []

    def register(self, area: ContextAreaImplementation) -> None:
        # spec: register() performs no validation or duplicate detection.
        self.areas.append(area)

    def render(self) -> Context:
        self.collect()
        self.unfold()
        return self.context

    def unfold(self) -> None:
        # spec: from the cursor, each retained Area observes (once it has a range) and renders;
        # exclusive keeps the cursor and returns, yielded advances it.
        areas, ranges, context = self.areas, self.ranges, self.context
        count, cursor = len(areas), self.cursor
        # Enum members bound once: each lookup of one costs 0.2 us on Python 3.11.
        retain, exclusive = AreaLifeState.retain, AreaFlowState.exclusive
        for index, area in enumerate(areas[cursor:] + areas[:cursor], cursor):
            if area.life_state is not retain:
                continue
            effect = ranges.get(area)
            if effect is not None:
                area.observe(context[effect.earliest : effect.latest + 1])
                if area.life_state is not retain:
                    continue  # spec: retired inside observe(): no render this pass
            messages = area.render()
            if messages:
                start = len(context)
                for message in messages:
                    context.emplace_message(message, RENDERED)
                # spec: the first non-empty render fixes earliest, later ones move latest.
                earliest = start if effect is None else effect.earliest
                # re-inserted: the dict stays ordered by `latest`, the Collector's order
                ranges.pop(area, None)
                ranges[area] = EffectRange(earliest, len(context) - 1)
            if area.flow_state is exclusive:
                self.cursor = index % count
                return

    def collect(self) -> None:
        retired = AreaLifeState.retired
        ranges = self.ranges
        # 1. The Collector starts from the range reaching furthest toward the tail and follows
        #    overlapping ranges backward; the component goes only when all of it is retired.
        component: list[ContextAreaImplementation] = []
        earliest = len(self.context)
        for area, effect in reversed(ranges.items()):
            if component and effect.latest < earliest:
                break
            component.append(area)
            earliest = min(earliest, effect.earliest)
        if any(area.life_state is not retired for area in component):
            component, earliest = [], len(self.context)
        # Areas that retired without ever rendering have nothing to detach.
        planned = component + [
            area for area in self.areas if area not in ranges and area.life_state is retired
        ]
        if not planned:
            return
        # 2. Every promote() before any gc_prologue().
        promoted = [message for area in planned for message in area.promote()]
        for area in planned:
            area.gc_prologue()
        # 3. Detach the tail, then append what was promoted.
        self.garbage += [item for item, _ in self.context.detach_tail(earliest)]
        for message in promoted:
            self.context.emplace_message(message, PROMOTED)
        # 4. Remove the Areas; the cursor stays on the same Area or moves to the next survivor.
        gone = set(planned)
        self.cursor -= sum(1 for area in self.areas[: self.cursor] if area in gone)
        self.areas = [area for area in self.areas if area not in gone]
        for area in planned:
            ranges.pop(area, None)
        if self.cursor >= len(self.areas):
            self.cursor = 0
