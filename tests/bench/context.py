"""Benchmark: CoopContext render and collection with 10 to 10,000 registered Areas.

Run as `python -m tests.bench.context`; prints JSON. Targets (the context-areas issue): a render
costs at most linearly in the Areas it touches, and a pass over 10,000 mostly idle Areas stays
within 10x of a pass over 1,000.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import cast

from engine.context import AreaFlowState, AreaLifeState, Context, CoopContext, NativeContent
from engine.gateway.base import GatewayType
from engine.message import Message, Role

SIZES = (10, 100, 1_000, 10_000)


class BenchArea:
    """Renders `pending` messages next time; otherwise idle."""

    def __init__(self, flow: AreaFlowState = AreaFlowState.yielded) -> None:
        self.life = AreaLifeState.retain
        self.flow = flow
        self.pending = 0

    @property
    def life_state(self) -> AreaLifeState:
        return self.life

    @property
    def flow_state(self) -> AreaFlowState:
        return self.flow

    def observe(self, context: Sequence[NativeContent]) -> None:
        pass

    def render(self) -> list[Message]:
        count, self.pending = self.pending, 0
        if not count:
            return []  # an idle Area allocates nothing
        return [Message(Role.user, "x")] * count

    def promote(self) -> tuple[Message, ...]:
        return ()

    def gc_prologue(self) -> None:
        pass


def timed(function: Callable[[], object], repeat: int) -> float:
    """Median per-call time in microseconds over `repeat` calls.

    The median, not the best: a best-of favours the size measured more often, which would bias
    the ratio between sizes measured with different repeat counts.
    """
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def idle_coop(n: int) -> CoopContext:
    """n Areas, all retained and yielded; 10% rendered once (ranges); a pass touches all of them."""
    coop = CoopContext(Context(GatewayType.scripted))
    areas = [BenchArea() for _ in range(n)]
    for i, area in enumerate(areas):
        area.pending = 1 if i % 10 == 0 else 0
        coop.register(area)
    coop.render()
    return coop


def idle_passes(
    sizes: Sequence[int], rounds: int = 40
) -> tuple[dict[int, float], dict[int, float]]:
    """Median microseconds of one pass per size, and of the baseline, in interleaved rounds.

    The baseline is the least any pass must do: a plain loop over the same Area objects reading
    life_state, calling render() and reading flow_state. Interleaving puts every size under the same
    machine state (frequency, neighbours, caches) instead of measuring the large size minutes after
    the small one.
    """
    coops = {n: idle_coop(n) for n in sizes}
    areas = {n: coop.areas for n, coop in coops.items()}

    def bare(listed: Sequence[BenchArea]) -> None:
        for area in listed:
            if area.life_state is AreaLifeState.retain:
                area.render()
                _ = area.flow_state

    samples: dict[int, list[float]] = {n: [] for n in sizes}
    baseline: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(rounds):
        for n, coop in coops.items():
            start = time.perf_counter()
            coop.render()
            samples[n].append(time.perf_counter() - start)
            listed = cast(Sequence[BenchArea], areas[n])
            start = time.perf_counter()
            bare(listed)
            baseline[n].append(time.perf_counter() - start)

    def medians(values: dict[int, list[float]]) -> dict[int, float]:
        return {n: statistics.median(v) * 1e6 for n, v in values.items()}

    return medians(samples), medians(baseline)


def exclusive_render(n: int) -> float:
    """One exclusive Area holds the cursor among n idle ones: a render touches one Area."""
    coop = CoopContext(Context(GatewayType.scripted))
    for _ in range(n - 1):
        coop.register(BenchArea())
    holder = BenchArea(AreaFlowState.exclusive)
    coop.register(holder)
    holder.pending = 1
    coop.render()  # the first pass walks to the holder and returns on it
    return timed(coop.render, 20)


def collection(n: int) -> dict[str, float]:
    """Overlapping chains of 10 (one long-lived Area spans nine one-shots), interleaved with
    conversation; every chain retires and is collected one per render, tail first."""
    context = Context(GatewayType.scripted)
    coop = CoopContext(context)
    chains: list[list[BenchArea]] = []
    for _ in range(n // 10):
        spine = BenchArea()
        coop.register(spine)
        spine.pending = 1
        chain = [spine]
        for _ in range(9):
            area = BenchArea()
            area.pending = 1
            coop.register(area)
            chain.append(area)
        chains.append(chain)
    coop.render()
    for chain in chains:
        chain[0].pending = 1  # re-render: every spine now reaches past its chain
    coop.render()
    for chain in chains:
        for area in chain:
            area.life = AreaLifeState.retired
    renders = 0
    start = time.perf_counter()
    while coop.areas:
        coop.render()
        renders += 1
    elapsed = time.perf_counter() - start
    return {
        "renders": renders,
        "per_collected_area_us": elapsed / n * 1e6,
        "total_ms": elapsed * 1e3,
    }


def main() -> None:
    figures: dict[str, dict[str, object]] = {}
    passes, baseline = idle_passes(SIZES)
    for n in SIZES:
        figures[str(n)] = {
            "idle_pass_us": round(passes[n], 1),
            "idle_pass_per_area_us": round(passes[n] / n, 3),
            "baseline_loop_us": round(baseline[n], 1),
            "exclusive_render_us": round(exclusive_render(n), 1),
            "collection": {k: round(v, 3) for k, v in collection(n).items()},
        }
    big, small = figures["10000"], figures["1000"]
    ratio = float(big["idle_pass_us"]) / float(small["idle_pass_us"])  # type: ignore[arg-type]
    baseline_ratio = baseline[10_000] / baseline[1_000]
    report = {
        "areas": figures,
        "idle_pass_ratio_10000_over_1000": round(ratio, 2),
        "baseline_loop_ratio_10000_over_1000": round(baseline_ratio, 2),
        "target_idle_pass_ratio_max": 10,
        "meets_target": ratio <= 10,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
