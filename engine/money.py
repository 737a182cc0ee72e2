"""Amounts of money as Trellis shows them: a cost per currency (a session may have run models
priced in several), never converted."""

from __future__ import annotations

from collections.abc import Mapping


def amount_text(amount: float, currency: str) -> str:
    """`0.0042 USD`, `1.37 EUR`: four decimals below one unit, where a step's cost lies, two
    above."""
    return f"{amount:.4f} {currency}" if abs(amount) < 1 else f"{amount:,.2f} {currency}"


def cost_text(costs: Mapping[str, float]) -> str:
    """`0.0042 USD`, or `0.0042 USD + 0.0100 EUR` in currency order; "" for no cost."""
    return " + ".join(amount_text(costs[c], c) for c in sorted(costs))


def add_cost(costs: Mapping[str, float], amount: float, currency: str) -> dict[str, float]:
    """`costs` with `amount` more in `currency` (a new mapping: totals are shared values)."""
    return {**costs, currency: costs.get(currency, 0.0) + amount}
