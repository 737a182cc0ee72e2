"""The governors: how many past turns and how many characters one request may carry.

Character counting is deliberately conservative, not tokenizer accounting (context-orchestration,
"Governors"): an item costs the length of its compact JSON serialization, so the count is the same
for every provider format and includes the structure the provider is sent, not only the text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from engine.errors import TrellisError
from engine.gateway.base import NativeContent

DEFAULT_TURN_WINDOW = 20
"""At most this many complete past-turn groups enter one request."""

EVICTION_SHARE = 4
"""By default an eviction batch is a quarter of the turn window (`Budget.batch`)."""

DEFAULT_CHAR_CAP = 96_000
"""The character cap when the model's window is unknown and none is configured."""

CHARS_PER_TOKEN = 3
"""The window-derived cap counts three characters per model token (conservative by design)."""

OUTPUT_RESERVE_TOKENS = 4_096
"""Tokens of the window kept for the model's reply when the cap derives from the window: what a
gateway asks for when a request names no output limit (Anthropic's `max_tokens`)."""

OUTPUT_RESERVE_SHARE = 0.25
"""At most this part of a small window is kept for the reply, so its input still has room."""

TOOL_OUTPUT_SHARE = 0.25
"""The part of the cap one batch of tool results may fill, so that a default read never breaks the
turn and leaves room for the next step."""

CapSource = Literal["window", "configured", "default"]
"""Where the effective cap comes from: the model's window, the user's `char_cap`, or neither."""


def item_text(item: NativeContent) -> str:
    """One native item exactly as it is counted: its compact JSON serialization."""
    return json.dumps(item, separators=(",", ":"), ensure_ascii=False)


def item_chars(item: NativeContent) -> int:
    """What one native item costs: the length of its compact JSON serialization."""
    return len(item_text(item))


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """The governors of one request; `generation_window` narrows `context_window` when both are
    known. `char_cap` is the user's own cap (`[context] char_cap`), None when not configured."""

    turn_window: int = DEFAULT_TURN_WINDOW  # 0 or less keeps no past turn
    eviction_batch: int | None = None  # None: a quarter of the window; 1 slides group by group
    char_cap: int | None = None
    context_window: int | None = None
    generation_window: int | None = None
    chars_per_token: int = CHARS_PER_TOKEN

    def __post_init__(self) -> None:
        if self.char_cap is not None and self.char_cap <= 0:
            raise ValueError(f"char_cap must be positive, got {self.char_cap}")
        if self.eviction_batch is not None and self.eviction_batch <= 0:
            raise ValueError(f"eviction_batch must be positive, got {self.eviction_batch}")
        if self.chars_per_token <= 0:
            raise ValueError(f"chars_per_token must be positive, got {self.chars_per_token}")
        for name, window in (
            ("context_window", self.context_window),
            ("generation_window", self.generation_window),
        ):
            if window is not None and window <= 0:
                raise ValueError(f"{name} must be positive when given, got {window}")

    @property
    def batch(self) -> int:
        """How many of the oldest history groups go at once when the window or the cap is
        exceeded: `eviction_batch`, else a quarter of the turn window (at least one). Dropping
        several at once lets the requests that follow share their prefix until the next batch."""
        if self.eviction_batch is not None:
            return self.eviction_batch
        return max(1, self.turn_window // EVICTION_SHARE)

    @property
    def window(self) -> int | None:
        """The model window the cap derives from: the generation window wins when known."""
        if self.generation_window is not None:
            return self.generation_window
        return self.context_window

    @property
    def output_reserve(self) -> int:
        """Tokens of the window kept for the reply: `OUTPUT_RESERVE_TOKENS`, or a quarter of a
        small window; 0 when no window is known."""
        window = self.window
        if window is None:
            return 0
        return min(OUTPUT_RESERVE_TOKENS, int(window * OUTPUT_RESERVE_SHARE))

    @property
    def window_cap(self) -> int | None:
        """What the window allows the input: `chars_per_token x (window - output_reserve)`."""
        window = self.window
        if window is None:
            return None
        return self.chars_per_token * (window - self.output_reserve)

    @property
    def cap(self) -> int:
        """The window's cap, or the configured `char_cap` when it is smaller; with no window,
        the configured cap, else `DEFAULT_CHAR_CAP`."""
        derived = self.window_cap
        if derived is None:
            return DEFAULT_CHAR_CAP if self.char_cap is None else self.char_cap
        return derived if self.char_cap is None else min(self.char_cap, derived)

    @property
    def cap_source(self) -> CapSource:
        """Which rule gave `cap`."""
        derived = self.window_cap
        if self.char_cap is not None and (derived is None or self.char_cap <= derived):
            return "configured"
        return "default" if derived is None else "window"

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
