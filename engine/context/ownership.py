"""Who owns an item appended between renders, decided from reported facts only.

Live stamping and `rebuild_context` both ask this ledger, fed by the same facts the events carry
(`area/state` and `area/cursor`), so a rebuilt Context has the same owners as the live one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.context.area import AreaFlowState, AreaLifeState


def holds_exclusively(life: AreaLifeState | None, flow: AreaFlowState | None) -> bool:
    """Whether an Area at the cursor with this reported state owns what is appended now."""
    return life is AreaLifeState.retain and flow is AreaFlowState.exclusive


@dataclass(slots=True)
class OwnershipLedger:
    """The last reported life and flow of each Area, and the cursor.

    docs/spec/context-areas.md, "Ownership and carry-over": an item appended while an Area holds the
    cursor exclusively belongs to that Area. After a render, the Area at the cursor holds it
    exclusively exactly when its reported state is (retain, exclusive): a pass returns on such an
    Area, and every Area a pass passes over has reported yielded or retired.
    """

    states: dict[str, tuple[AreaLifeState, AreaFlowState]] = field(default_factory=dict)
    cursor: str | None = None

    def holder(self) -> str | None:
        if self.cursor is None:
            return None
        state = self.states.get(self.cursor)
        if state is not None and holds_exclusively(*state):
            return self.cursor
        return None

    def forget(self, area_id: str) -> None:
        self.states.pop(area_id, None)
        if self.cursor == area_id:
            self.cursor = None
