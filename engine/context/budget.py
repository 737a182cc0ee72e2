"""The governors: how many past turns and how many characters one request may carry.

Character counting is deliberately conservative, not tokenizer accounting (context-orchestration,
"Governors"): an item costs the length of its compact JSON serialization, so the count is the same
for every provider format and includes the structure the provider is sent, not only the text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from engine.errors import TrellisError
from engine.gateway.base import NativeContent

DEFAULT_TURN_WINDOW = 20
"""At most this many complete past-turn groups enter one request."""

DEFAULT_CHAR_CAP = 96_000
"""The character cap when the model's window is unknown or larger."""

CHARS_PER_TOKEN = 3
"""The window-derived cap counts three characters per model token (conservative by design)."""

TOOL_OUTPUT_SHARE = 0.25
"""The part of the cap one batch of tool results may fill, so that a default read never breaks the
turn and leaves room for the next step."""


def item_text(item: NativeContent) -> str:
    """One native item exactly as it is counted: its compact JSON serialization."""
    return json.dumps(item, separators=(",", ":"), ensure_ascii=False)


def item_chars(item: NativeContent) -> int:
    """What one native item costs: the length of its compact JSON serialization."""
    return len(item_text(item))


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """The governors of one request; `generation_window` narrows `context_window` when both are known."""

    turn_window: int = DEFAULT_TURN_WINDOW  # 0 or less keeps no past turn
    char_cap: int = DEFAULT_CHAR_CAP
    context_window: int | None = None
    generation_window: int | None = None
    chars_per_token: int = CHARS_PER_TOKEN

    def __post_init__(self) -> None:
        if self.char_cap <= 0:
            raise ValueError(f"char_cap must be positive, got {self.char_cap}")
        if self.chars_per_token <= 0:
            raise ValueError(f"chars_per_token must be positive, got {self.chars_per_token}")
        for name, window in (
            ("context_window", self.context_window),
            ("generation_window", self.generation_window),
        ):
            if window is not None and window <= 0:
                raise ValueError(f"{name} must be positive when given, got {window}")

    @property
    def window(self) -> int | None:
        """The model window the cap derives from: the generation window wins when known."""
        if self.generation_window is not None:
            return self.generation_window
        return self.context_window

    @property
    def cap(self) -> int:
        """`min(char_cap, chars_per_token x window)`, or `char_cap` when no window is known."""
        window = self.window
        if window is None:
            return self.char_cap
        return min(self.char_cap, self.chars_per_token * window)

    def tool_output_limit(self, tool_limit: int, batch_size: int) -> int:
        """Characters one result of a batch of `batch_size` calls may carry: the tool's own limit,
        or its equal part of `TOOL_OUTPUT_SHARE` of the cap when that is smaller."""
        share = int(self.cap * TOOL_OUTPUT_SHARE) // max(1, batch_size)
        return max(1, min(tool_limit, share))


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetBreakdown:
    """What was reserved before any history: the parts that can never be cut."""

    floor: int
    reserved_lane: int
    current_turn: int
    largest_index: int | None = None
    largest_chars: int = 0

    @property
    def total(self) -> int:
        return self.floor + self.reserved_lane + self.current_turn


class ContextBudgetExceededError(TrellisError):
    """The floor, the reserved lane and the current turn alone exceed the cap; the turn ends `budget`."""

    needed: int
    allowed: int
    breakdown: BudgetBreakdown

    def __init__(self, *, needed: int, allowed: int, breakdown: BudgetBreakdown) -> None:
        message = (
            f"the context needs {needed:,} characters before any history "
            f"(floor {breakdown.floor:,}, reserved lane {breakdown.reserved_lane:,}, "
            f"current turn {breakdown.current_turn:,}) but the cap allows {allowed:,}"
        )
        if breakdown.largest_index is not None:
            message += (
                f"; the largest item is Context index {breakdown.largest_index} "
                f"at {breakdown.largest_chars:,} characters"
            )
        super().__init__(message)
        self.needed = needed
        self.allowed = allowed
        self.breakdown = breakdown
