"""Compaction through the collection mechanism (docs/spec/context-areas.md, "Compaction").

The oldest complete history groups that lie before every Area's effect range are detached, the
model's summary of them is appended, and everything else of the detached tail is carried over in
order. Groups are whole turns, so a tool call is never separated from its result; promoted items
are carried, never summarized away (a promoted message is never lost).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.context.context import Context
from engine.context.provenance import ItemKind, Provenance
from engine.gateway.base import NativeContent

KEPT_KINDS = frozenset({ItemKind.promoted})
"""Items that survive compaction as they are."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPlan:
    """What one compaction detaches, summarizes and carries, in Context indices."""

    earliest: int
    cut: int
    groups: int
    reclaimed: tuple[int, ...]
    carried: tuple[int, ...]

    @property
    def shift(self) -> int:
        """How far every index at or after `cut` moves: the summary replaces the reclaimed items."""
        return 1 - len(self.reclaimed)


def group_starts(provenances: Sequence[Provenance]) -> list[int]:
    """The first index of each complete turn group, oldest first.

    Items appended between turns join the group of the turn that follows them; items after the
    last turn (context waiting for the next one) belong to no complete group.
    """
    starts: list[int] = []
    current: int | None = None
    pending: int | None = None
    for index, provenance in enumerate(provenances):
        if provenance.kind in KEPT_KINDS or provenance.turn is None:
            if pending is None and provenance.turn is None:
                pending = index
            continue
        if provenance.turn != current:
            starts.append(pending if pending is not None else index)
            current = provenance.turn
        pending = None
    return starts


def plan_compaction(
    provenances: Sequence[Provenance], *, keep_groups: int, barrier: int
) -> CompactionPlan | None:
    """Plan to summarize the oldest groups, keeping the newest `keep_groups` whole.

    `barrier` is the earliest index of any Area's effect range (or the Context's length): only
    groups that end at or before it are eligible. None when there is nothing to compact.
    """
    if keep_groups < 0:
        raise ValueError(f"keep_groups must be 0 or more, got {keep_groups}")
    starts = group_starts(provenances)
    ends = [*starts[1:], _complete_end(provenances, starts)]
    eligible = [i for i, end in enumerate(ends) if end <= barrier]
    count = min(len(eligible), len(starts) - keep_groups)
    if count <= 0:
        return None
    earliest, cut = starts[0], ends[count - 1]
    reclaimed = tuple(i for i in range(earliest, cut) if provenances[i].kind not in KEPT_KINDS)
    if not reclaimed:
        return None
    reclaimed_set = set(reclaimed)
    carried = tuple(i for i in range(earliest, len(provenances)) if i not in reclaimed_set)
    return CompactionPlan(
        earliest=earliest, cut=cut, groups=count, reclaimed=reclaimed, carried=carried
    )


def _complete_end(provenances: Sequence[Provenance], starts: list[int]) -> int:
    """Where the last complete group ends: before the trailing between-turn items, if any."""
    end = len(provenances)
    while end > (starts[-1] if starts else 0) and provenances[end - 1].turn is None:
        end -= 1
    return end


def apply_compaction(
    context: Context,
    *,
    earliest: int,
    reclaimed: Sequence[int],
    carried: Sequence[int],
    summary: NativeContent,
    provenance: Provenance,
) -> list[tuple[NativeContent, Provenance]]:
    """Detach from `earliest`, append the summary, re-append the carried items in order.

    Returns the reclaimed entries (for `garbage`). Live compaction and the rebuild both call it, so
    the rebuilt Context matches the live one.
    """
    detached = context.detach_tail(earliest)
    gone = [detached[i - earliest] for i in reclaimed]
    context.append_native(summary, provenance)
    for i in carried:
        context.append_native(*detached[i - earliest])
    return gone
