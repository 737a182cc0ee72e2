"""What a step cost: the tokens the provider reported, at the price of the model entry that ran
it (`ModelEntry.price`). Recorded on `step/end`, so a replay, an export or a client totals the
session from the log alone, at the prices of the time."""

from __future__ import annotations

from engine.config import ModelEntry
from engine.events import Cost, Usage


def step_cost(entry: ModelEntry, usage: Usage) -> Cost | None:
    """The step's cost; None when the entry has no price or the provider reported no tokens (a
    failed or cancelled step: what it would cost is not known)."""
    price = entry.price
    if price is None or (usage.prompt_tokens <= 0 and usage.output_tokens <= 0):
        return None
    amount = price.cost_of(
        input_tokens=usage.input_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
    )
    return Cost(amount=amount, currency=price.currency)
