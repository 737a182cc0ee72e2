"""Assembly cost against session length: it should depend on what is kept, not on how long the
session is (docs/ARCHITECTURE.md, principle 5). Run `python -m tests.bench.orchestrator`; prints
JSON.

For each size the session's past turns are indexed once (as on resume), then turns are played the
way the agent loop plays them: append the query, assemble, append the model's tool call and its
result, assemble again; the sizes take turns, so load on the machine falls on all of them. The baseline in the same run assembles with a fresh orchestrator each time,
i.e. re-indexing the whole history per step.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from dataclasses import dataclass, field

from engine.context.budget import Budget
from engine.context.floor import Block, Layer
from engine.context.orchestrator import ContextOrchestrator
from engine.context.provenance import ItemKind, Provenance
from engine.gateway.base import NativeContent
from engine.message import Source
from engine.privacy import PrivacyClass, PrivatizationLabel

SIZES = (100, 1_000, 10_000)
MEASURED_TURNS = 200
BASELINE_STEPS = 5
TARGET_RATIO = 2.0
FLOOR = (
    Block.of(Layer.identity, "system_prompt", "You are Trellis, a careful coding agent. " * 20),
    Block.of(Layer.codex, "AGENTS.md", "Instructions from AGENTS.md:\n" + "- keep it short\n" * 60),
)
RETAINED = frozenset({"plan-1"})
INTERNAL = PrivatizationLabel(cls=PrivacyClass.internal)


@dataclass(slots=True)
class BenchSession:
    items: list[NativeContent] = field(default_factory=list)
    provenances: list[Provenance] = field(default_factory=list)

    def add(
        self,
        item: NativeContent,
        kind: ItemKind,
        turn: int | None,
        source: Source,
        owner: str | None = None,
    ) -> None:
        self.provenances.append(
            Provenance(
                kind=kind,
                seq=len(self.items),
                turn=turn,
                source=source,
                label=INTERNAL,
                owner=owner,
            )
        )
        self.items.append(item)

    def query(self, turn: int) -> None:
        if turn % 10 == 0:  # context injected between turns joins the next turn's group
            note = {"role": "user", "content": f"[plugin] build finished for turn {turn}"}
            self.add(note, ItemKind.message, None, Source("plugin", "ci"))
        prompt = {"role": "user", "content": f"Turn {turn}: please look at module {turn}. " * 5}
        self.add(prompt, ItemKind.message, turn, Source("user"))

    def work(self, turn: int) -> None:
        call = {
            "role": "assistant",
            "content": "Reading the file.",
            "tool_calls": [
                {
                    "id": f"c{turn}",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": f'{{"path": "m{turn}.py"}}'},
                }
            ],
        }
        self.add(call, ItemKind.assistant, turn, Source("model", "bench"))
        body = f"def f{turn}(x):\n    return x * {turn}\n" * 20
        result = {"role": "tool", "tool_call_id": f"c{turn}", "content": body}
        self.add(result, ItemKind.tool_result, turn, Source("tool", "read_file"))

    def answer(self, turn: int) -> None:
        reply = {"role": "assistant", "content": f"Module {turn} multiplies its input. " * 6}
        self.add(reply, ItemKind.assistant, turn, Source("model", "bench"))


def build(past_turns: int) -> BenchSession:
    session = BenchSession()
    plan = {"role": "user", "content": "Plan:\n- [x] read\n- [ ] fix\n- [ ] test"}
    session.add(plan, ItemKind.area, 1, Source("area", "plan"), owner="plan-1")
    for turn in range(1, past_turns + 1):
        session.query(turn)
        session.work(turn)
        session.answer(turn)
        if turn in (2, 3):
            promoted = {"role": "user", "content": f"Subtask {turn}: done, tests pass."}
            session.add(promoted, ItemKind.promoted, turn, Source("area", "subtask"))
    return session


def assemble(orchestrator: ContextOrchestrator, session: BenchSession, turn: int) -> int:
    result = orchestrator.assemble(
        session.items,
        session.provenances,
        current_turn=turn,
        retained_owners=RETAINED,
        floor=FLOOR,
        budget=Budget(),
    )
    return result.groups_kept


@dataclass(slots=True)
class Run:
    """One session size under measurement."""

    past_turns: int
    session: BenchSession
    orchestrator: ContextOrchestrator
    index_ms: float
    samples: list[float] = field(default_factory=list)
    kept: int = 0

    def play_turn(self, turn: int) -> None:
        """Query, assemble, tool call and result, assemble again: two steps of one turn."""
        self.session.query(turn)
        for stage in range(2):
            started = time.perf_counter()
            self.kept = assemble(self.orchestrator, self.session, turn)
            self.samples.append((time.perf_counter() - started) * 1_000_000)
            if stage == 0:
                self.session.work(turn)
        self.session.answer(turn)

    def report(self) -> dict[str, float | int]:
        baseline: list[float] = []
        final_turn = self.past_turns + MEASURED_TURNS + 1
        for _ in range(BASELINE_STEPS):
            started = time.perf_counter()
            assemble(ContextOrchestrator(), self.session, final_turn)
            baseline.append((time.perf_counter() - started) * 1_000_000)
        ordered = sorted(self.samples)
        return {
            "past_turns": self.past_turns,
            "items": len(self.session.items),
            "index_build_ms": round(self.index_ms, 2),
            "assemble_us_median": round(statistics.median(ordered), 1),
            "assemble_us_p95": round(ordered[int(len(ordered) * 0.95)], 1),
            "groups_kept": self.kept,
            "baseline_full_rebuild_us_median": round(statistics.median(baseline), 1),
        }


def start(past_turns: int) -> Run:
    """Build the session and index its whole history once, as a resume does."""
    session = build(past_turns)
    orchestrator = ContextOrchestrator()
    started = time.perf_counter()
    assemble(orchestrator, session, past_turns + 1)
    index_ms = (time.perf_counter() - started) * 1_000
    return Run(past_turns, session, orchestrator, index_ms)


def main() -> int:
    runs = [start(size) for size in SIZES]
    gc.collect()
    for offset in range(1, MEASURED_TURNS + 1):
        for run in runs:  # interleaved, so a busy machine slows every size alike
            run.play_turn(run.past_turns + offset)
    results = [run.report() for run in runs]
    ratio = results[-1]["assemble_us_median"] / results[0]["assemble_us_median"]
    report = {
        "benchmark": "orchestrator.assemble",
        "steps_per_size": 2 * MEASURED_TURNS,
        "sizes": results,
        "ratio_10000_vs_100": round(ratio, 2),
        "target_ratio": TARGET_RATIO,
        "pass": ratio <= TARGET_RATIO,
    }
    print(json.dumps(report, indent=2))
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
