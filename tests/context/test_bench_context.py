"""The Areas benchmark's register() figure: measured beside the bare loop in the same rounds,
each side first in turn, and judged as a ratio to it (the machine's speed drifts)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from engine.context import CoopContext
from tests.bench import context as bench


def test_register_rounds_rotate_and_the_ratio_is_per_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order: list[str] = []
    # per round: Trellis, reference, bare (microseconds for the whole round of n Areas)
    costs = iter([(400.0, 10.0, 100.0), (600.0, 10.0, 100.0), (300.0, 10.0, 50.0)])
    current: dict[str, float] = {}

    def clock(function: Callable[[], object]) -> float:
        function()
        assert isinstance(function, partial)
        if function.func is bench.bare:
            name = "bare"
        else:
            name = "trellis" if isinstance(function.args[0], CoopContext) else "reference"
        if not order or len(order) % 3 == 0:
            current.update(zip(("trellis", "reference", "bare"), next(costs), strict=True))
        order.append(name)
        return current[name]

    monkeypatch.setattr(bench, "clock", clock)
    figures = bench.registers(3, n=10)
    assert order == [
        "trellis", "reference", "bare",
        "reference", "bare", "trellis",
        "bare", "trellis", "reference",
    ]  # fmt: skip
    assert figures["trellis_us"] == 40.0  # median of 40, 60, 30 us per Area
    assert figures["bare_us"] == 10.0
    # each round's own ratio (4, 6, 6), not the ratio of the medians (4)
    assert figures["trellis_over_bare"] == 6.0
