"""What the stored sessions used and cost (`trellis stats`): sessions, steps, tokens by part
(`Usage`) and cost per currency (`StepEnd.cost`, at the prices of the time), in total or grouped
by model, day (UTC) or session. Summed from the rows' JSON: reading every step of a store needs no
event model."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from engine.store.step_usage import StepRow

Grouping = Literal["model", "day", "session"]
GROUPINGS: tuple[Grouping, ...] = ("model", "day", "session")
TOKEN_PARTS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
"""`Usage`'s parts, which do not overlap: their sum is every token a step used."""


@dataclass(slots=True)
class UsageTotal:
    """The steps of one group: how many, in how many sessions, their tokens and cost."""

    key: str
    sessions: set[str] = field(default_factory=set)
    steps: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_PARTS, 0))
    cost: dict[str, float] = field(default_factory=dict)
    """Per ISO 4217 currency; a step without a price adds none."""

    def add(self, session_id: str, usage: dict[str, Any], cost: dict[str, Any] | None) -> None:
        self.sessions.add(session_id)
        self.steps += 1
        for part in TOKEN_PARTS:
            value = usage.get(part)
            if isinstance(value, int):
                self.tokens[part] += value
        if cost is not None:
            currency = str(cost["currency"])
            self.cost[currency] = self.cost.get(currency, 0.0) + float(cost["amount"])

    def record(self) -> dict[str, Any]:
        """The group as `trellis stats --json` prints it."""
        return {
            "key": self.key,
            "sessions": len(self.sessions),
            "steps": self.steps,
            "tokens": {part.removesuffix("_tokens"): n for part, n in self.tokens.items()},
            "cost": dict(sorted(self.cost.items())),
        }


@dataclass(frozen=True, slots=True)
class UsageStats:
    groups: tuple[UsageTotal, ...]
    """In key order (days oldest first); empty without a grouping."""
    total: UsageTotal


def usage_stats(rows: Iterable[StepRow], by: Grouping | None) -> UsageStats:
    """Sum `rows` (`engine.store.step_usage.step_rows`, in log order per session): each step
    counts for the model its session was bound to when it ran."""
    total = UsageTotal("total")
    groups: dict[str, UsageTotal] = {}
    bound: dict[str, str] = {}
    for row in rows:
        data = json.loads(row.data)
        if row.type == "model/bind":
            bound[row.session_id] = str(data["model"])
            continue
        usage, cost = data.get("usage") or {}, data.get("cost")
        total.add(row.session_id, usage, cost)
        if by is None:
            continue
        key = _key(row, by, bound.get(row.session_id, row.session_model))
        group = groups.get(key)
        if group is None:
            group = groups[key] = UsageTotal(key)
        group.add(row.session_id, usage, cost)
    return UsageStats(tuple(groups[k] for k in sorted(groups)), total)


def _key(row: StepRow, by: Grouping, model: str) -> str:
    match by:
        case "model":
            return model or "(unknown)"
        case "day":
            return datetime.fromtimestamp(row.time, UTC).date().isoformat()
        case "session":
            return row.session_id


def parse_since(text: str) -> float:
    """`2026-01-31` (midnight UTC) or an ISO 8601 date and time (UTC unless it names an
    offset) as epoch seconds; `ValueError` saying what is expected."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is not a date: give YYYY-MM-DD or an ISO 8601 date and time "
            "(2026-01-31, 2026-01-31T09:30, 2026-01-31T09:30+01:00)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
