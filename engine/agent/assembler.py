"""Per-turn floor and per-step assembly: the agent's side of the context orchestrator.

At each turn start the staged model binding takes effect, the codex is re-read and the environment
snapshot for (session, model entry, grant epoch) is leased; new floor blocks are logged once. Each
step then assembles from the Context under the budget and passes the egress gate.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.agent.tool_definitions import DefinitionLog
from engine.config import Config, ModelEntry
from engine.context import Context
from engine.context.budget import Budget
from engine.context.egress import EgressGate
from engine.context.floor import (
    Block,
    FloorBuilder,
    FloorLog,
    Layer,
    PinBoard,
    environment_block,
    karma_blocks,
    order_floor,
)
from engine.context.grants import (
    EnvironmentKey,
    EnvironmentLease,
    EnvironmentSnapshots,
    Grant,
    GrantTracker,
)
from engine.context.orchestrator import AssembledContext, ContextOrchestrator
from engine.context.prefix import PlannedBreaks, PrefixTally, PrefixView
from engine.cost import step_cost
from engine.events import (
    BreakReason,
    Cost,
    Event,
    FloorBlock,
    ModelBind,
    Payload,
    PinAdd,
    PinRemove,
    PrefixBreak,
    StepStart,
    ToolDefinition,
    Usage,
)
from engine.os_text import storable_os_text
from engine.privacy import PrivacyClass


@dataclass(frozen=True, slots=True)
class Binding:
    """The model entry a turn runs with."""

    name: str
    entry: ModelEntry
    epoch: int


class Assembler:
    """Owns the floor, the grants and the orchestrator for one session."""

    def __init__(
        self,
        *,
        config: Config,
        session_id: str,
        workspace: Path,
        events: Iterable[Event] = (),
    ) -> None:
        self.config = config
        self.session_id = session_id
        self.workspace = workspace
        context = config.context
        self.secret_patterns = tuple(context.secret_patterns)
        self.shell_class: PrivacyClass = context.shell_privacy_class()
        self.builder = FloorBuilder(
            system_prompt=context.system_prompt,
            workspace_root=workspace,
            instruction_files=tuple(context.instruction_files),
            instruction_max_bytes=context.instruction_max_bytes,
            secret_patterns=self.secret_patterns,
        )
        self.orchestrator = ContextOrchestrator(shell_class=self.shell_class)
        self.grants = GrantTracker()
        self.snapshots = EnvironmentSnapshots()
        self.floor_log = FloorLog()
        self.tool_log = DefinitionLog()
        self.pins = PinBoard()
        self.breaks = PlannedBreaks()
        self.prefix_tally = PrefixTally()  # the log's prefix figures, per step, turn and session
        self._floor: tuple[Block, ...] = ()
        self._floor_pins: tuple[tuple[str, str], ...] | None = None  # None: no floor built yet
        self._floor_grant: Grant | None = None
        self._rebase_due = False
        self._stepped = False  # the log followed has a request: a new floor is a rebuilt one
        self._lease: EnvironmentLease | None = None
        self._pin_serial = 0
        for event in events:
            self.follow(event.data)

    def follow(self, payload: Payload) -> None:
        """Keep grants, pins and the floor and tool logs in step with the session log."""
        if (follow := _FOLLOW.get(type(payload))) is not None:
            follow(self, payload)

    def follow_rewound(self, payload: Payload) -> None:
        """An event a rewind took out of the history: grant epochs and pin ids stay taken, the
        floor and tool logs keep what it logged (each is logged once per session), and its
        requests stay in the prefix figures (a rewound request was still sent)."""
        if (follow := _FOLLOW_REWOUND.get(type(payload))) is not None:
            follow(self, payload)

    def _follow_bind(self, payload: ModelBind) -> None:
        self.grants.apply(payload)

    def _skip_bind(self, payload: ModelBind) -> None:
        self.grants.skip(payload)

    def _follow_pin_add(self, payload: PinAdd) -> None:
        self.pins.apply(payload)
        self._note_pin_id(payload.pin_id)

    def _follow_pin_remove(self, payload: PinRemove) -> None:
        self.pins.apply(payload)

    def _skip_pin_add(self, payload: PinAdd) -> None:
        self._note_pin_id(payload.pin_id)

    def _follow_floor_block(self, payload: FloorBlock) -> None:
        self.floor_log.note(payload)

    def _follow_tool_definition(self, payload: ToolDefinition) -> None:
        self.tool_log.note(payload)

    def _follow_request(self, payload: StepStart | PrefixBreak) -> None:
        self._stepped = True
        self.prefix_tally.apply(payload)

    def _note_pin_id(self, pin_id: str) -> None:
        if pin_id.startswith("pin") and pin_id[3:].isdigit():
            self._pin_serial = max(self._pin_serial, int(pin_id[3:]))

    def fresh(self) -> Assembler:
        """An assembler for the same session, configuration and workspace that followed nothing."""
        return Assembler(config=self.config, session_id=self.session_id, workspace=self.workspace)

    @property
    def binding(self) -> Binding:
        """The grant in force (or the one the next turn starts with, when idle)."""
        grant = self.grants.active
        if grant is None:
            raise RuntimeError(f"session {self.session_id} has no model binding")
        return self._binding(grant)

    def _binding(self, grant: Grant) -> Binding:
        _, entry = self.config.model(grant.model)
        return Binding(grant.model, entry, grant.epoch)

    @property
    def egress(self) -> PrivacyClass:
        """The highest class the bound entry's endpoint accepts."""
        return self.binding.entry.effective_egress()

    @property
    def upcoming(self) -> Grant | None:
        """The grant the next turn runs with: one staged during a turn, else the one in force."""
        return self.grants.staged or self.grants.active

    def note_detached(self, earliest: int) -> None:
        """The Context changed from `earliest` on (a collection, a compaction, a rebind): the
        orchestrator re-indexes from there."""
        self.orchestrator.note_detached(earliest)

    @property
    def active_model(self) -> str | None:
        """The entry of the grant in force, None before the first binding."""
        grant = self.grants.active
        return None if grant is None else grant.model

    def bind(self, name: str) -> ModelBind:
        """Bind the session to entry `name` (staged while a turn runs); returns the `model/bind`
        to record."""
        return self.grants.bind(name)

    @property
    def pinned(self) -> tuple[tuple[str, str], ...]:
        """The pins, (id, text) in pinning order."""
        return self.pins.pins

    @property
    def last_prefix(self) -> PrefixView | None:
        """What the last request repeated of the one before, as the log's figures tally it."""
        return self.prefix_tally.last

    def identity(self) -> tuple[Block, ...]:
        """The floor's identity layer (the system prompt) as a request would carry it now."""
        return self.builder.identity()

    def step_cost(self, usage: Usage) -> Cost | None:
        """What a step that used `usage` costs on the bound entry."""
        return step_cost(self.binding.entry, usage)

    def note_break(self, reason: BreakReason, detail: str = "") -> None:
        """The next request's prefix breaks for `reason` (logged with that step's `prefix/break`)."""
        self.breaks.note(reason, detail)

    def take_breaks(self, *, turn: int, step: int) -> list[PrefixBreak]:
        """The planned breaks to log before step `step` of turn `turn`; forgets them."""
        return self.breaks.take(turn=turn, step=step)

    def inherit_breaks(self, previous: Assembler) -> None:
        """Take over the planned breaks `previous` noted and no step logged yet (a rewind
        replaces the assembler between turns)."""
        self.breaks = previous.breaks

    def next_pin_id(self) -> str:
        self._pin_serial += 1
        return f"pin{self._pin_serial}"

    async def begin_turn(
        self, tool_names: Callable[[], Iterable[str]], model_id: str
    ) -> list[FloorBlock]:
        """Open the turn's grant and floor; returns the floor blocks not logged before.

        `tool_names` are the configured tools: a tool added for a while at run time travels in
        the request's tool field only, so the environment block is the same all epoch long.
        """
        grant = self.grants.begin_turn()
        if grant is None:
            raise RuntimeError(f"session {self.session_id} has no model binding")
        key = EnvironmentKey(
            session_id=self.session_id, model_entry=grant.model, grant_epoch=grant.epoch
        )
        self._lease = self.snapshots.acquire(
            key,
            lambda: environment_block(
                cwd=storable_os_text(str(self.workspace)),
                platform=f"{platform.system()} {platform.machine()}".strip(),
                model=f"{grant.model} ({model_id})",
                tools=tool_names(),
                grant_epoch=grant.epoch,
            ),
        )
        # the floor changes only at a planned break: pins added since the last one wait at the
        # tail of the conversation, where they were injected
        rebase = self._floor_pins is None or self._rebase_due or grant != self._floor_grant
        pins = self.pins.pins if rebase or self._floor_pins is None else self._floor_pins
        floor = await self.builder.build(environment=self._lease.block, pins=pins)
        if _layers(floor, Layer.identity, Layer.codex) != _layers(
            self._floor, Layer.identity, Layer.codex
        ):  # changed instructions break the prefix anyway: the pins join with them
            pins = self.pins.pins
            floor = _with_pins(floor, pins)
        self._note_floor_change(floor, grant)
        self._floor, self._floor_pins, self._floor_grant = floor, pins, grant
        self._rebase_due = False
        return self.floor_log.new_blocks(self._floor)

    def _note_floor_change(self, floor: tuple[Block, ...], grant: Grant) -> None:
        """Note why the new turn's floor differs from the last turn's (a planned break)."""
        if not self._floor:
            if self._stepped:
                self.note_break("rebuilt", "the session's state was rebuilt from its log")
            return
        before = self._floor_grant
        if before is not None and before.model != grant.model:
            self.note_break("model", f"{before.model} -> {grant.model}")
        elif before is not None and before.epoch != grant.epoch:
            self.note_break("grant", f"grant epoch {grant.epoch}")
        if _layer(self._floor, Layer.karma) != _layer(floor, Layer.karma):
            self.note_break("pins", _pins_change(self._floor, floor))
        if _layers(self._floor, Layer.identity, Layer.codex) != _layers(
            floor, Layer.identity, Layer.codex
        ):
            self.note_break("instructions", "the system prompt or an instruction file changed")

    def rebase_due(self) -> None:
        """A planned break happened outside a turn (a compaction): the next floor takes the pins."""
        self._rebase_due = True

    @property
    def floor_built(self) -> bool:
        """A floor was built in this process: a pin change waits for the next planned break."""
        return self._floor_pins is not None

    @property
    def pins_waiting(self) -> bool:
        """Pins were added or removed since the floor was built: they join it at the next break."""
        return self._floor_pins is not None and self._floor_pins != self.pins.pins

    def rebase_pins(self) -> list[FloorBlock]:
        """Let the waiting pins join the floor now (a request already breaks its prefix);
        returns the floor blocks not logged before."""
        floor = _with_pins(self._floor, self.pins.pins)
        self.note_break("pins", _pins_change(self._floor, floor))
        self._floor, self._floor_pins = floor, self.pins.pins
        return self.floor_log.new_blocks(floor)

    def end_turn(self) -> None:
        if self._lease is not None:
            self.snapshots.release(self._lease)
            self._lease = None
        self.grants.end_turn()

    def budget(self) -> Budget:
        """The governors of a request to the bound model entry."""
        entry = self.binding.entry
        return Budget(
            turn_window=self.config.context.turn_window,
            eviction_batch=self.config.context.eviction_batch,
            char_cap=self.config.context.char_cap,
            context_window=entry.context_window,
            generation_window=entry.generation_window,
        )

    def assemble(
        self, context: Context, *, turn: int, retained_owners: frozenset[str]
    ) -> AssembledContext:
        """Bound the request, then refuse it if it carries material above the entry's class."""
        binding = self.binding
        entry = binding.entry
        assembled = self.orchestrator.assemble(
            context,
            context.provenance_view,
            current_turn=turn,
            retained_owners=retained_owners,
            floor=self._floor,
            budget=self.budget(),
        )
        EgressGate.check(assembled, egress_class=entry.effective_egress(), model=binding.name)
        return assembled


_FOLLOW: dict[type[Payload], Callable[[Assembler, Any], None]] = {
    ModelBind: Assembler._follow_bind,
    PinAdd: Assembler._follow_pin_add,
    PinRemove: Assembler._follow_pin_remove,
    FloorBlock: Assembler._follow_floor_block,
    ToolDefinition: Assembler._follow_tool_definition,
    StepStart: Assembler._follow_request,
    PrefixBreak: Assembler._follow_request,
}
"""What each kind of event does to the assembler, found by the payload's exact class (see
`Payload`: a table, as a resume follows every event of the log); the others change nothing."""

_FOLLOW_REWOUND: dict[type[Payload], Callable[[Assembler, Any], None]] = {
    ModelBind: Assembler._skip_bind,
    PinAdd: Assembler._skip_pin_add,
    FloorBlock: Assembler._follow_floor_block,
    ToolDefinition: Assembler._follow_tool_definition,
    StepStart: Assembler._follow_request,
    PrefixBreak: Assembler._follow_request,
}
"""What an event a rewind took out of the history does to the assembler (`follow_rewound`)."""


def _with_pins(floor: tuple[Block, ...], pins: tuple[tuple[str, str], ...]) -> tuple[Block, ...]:
    """`floor` with `pins` as its karma layer."""
    return order_floor((*(b for b in floor if b.layer is not Layer.karma), *karma_blocks(pins)))


def _layer(floor: tuple[Block, ...], layer: Layer) -> tuple[str, ...]:
    return tuple(b.content_hash for b in floor if b.layer is layer)


def _layers(floor: tuple[Block, ...], *layers: Layer) -> tuple[str, ...]:
    return tuple(b.content_hash for b in floor if b.layer in layers)


def _pins_change(before: tuple[Block, ...], after: tuple[Block, ...]) -> str:
    """Which pins join and leave the floor, by id."""
    old = {b.key.removeprefix("pin:") for b in before if b.layer is Layer.karma}
    new = {b.key.removeprefix("pin:") for b in after if b.layer is Layer.karma}
    parts = []
    if joined := sorted(new - old):
        parts.append("joined: " + ", ".join(joined))
    if left := sorted(old - new):
        parts.append("left: " + ", ".join(left))
    return "; ".join(parts) or "pins rewritten"
