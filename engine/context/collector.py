"""The Collector: which connected component of effect ranges, if any, may be reclaimed now."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from engine.context.area import EffectRange

K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Component(Generic[K]):
    """The tail component: its Areas (nearest the tail first) and where its union begins."""

    areas: tuple[K, ...]
    earliest: int
    latest: int
    reclaimable: bool


def tail_component(
    ranges_by_latest_desc: Iterable[tuple[K, EffectRange]],
    is_retired: Callable[[K], bool],
) -> Component[K] | None:
    """The connected component that reaches furthest toward the tail.

    `ranges_by_latest_desc` must yield ranges in order of decreasing `latest`; the walk stops at the
    first range that ends before the component's union begins, so it costs the component's size.
    spec: the Collector starts from the range reaching furthest toward the tail and follows
    overlapping ranges (closed intervals; touching counts) backward; the component is reclaimable
    only when every Area in it is retired (a retained one blocks it, nested retired ones included).
    """
    areas: list[K] = []
    earliest = latest = -1
    reclaimable = True
    for area, effect in ranges_by_latest_desc:
        if areas and effect.latest < earliest:
            break  # sorted by latest: no later range can reach the union either
        if not areas:
            latest = effect.latest
            earliest = effect.earliest
        earliest = min(earliest, effect.earliest)
        areas.append(area)
        reclaimable = reclaimable and is_retired(area)
    if not areas:
        return None
    return Component(tuple(areas), earliest, latest, reclaimable)
