"""Read-only views of a running session for front ends: plain frozen data, copied when asked.

The console and the ACP bridge read these instead of the engine's working objects, so nothing they
hold can change the session, and the engine may change its internals without breaking them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.context.area import AreaFlowState, AreaLifeState, EffectRange
from engine.context.budget import item_chars, item_text
from engine.context.context import Context
from engine.context.coop_context import CoopContext
from engine.context.orchestrator import AssembledContext
from engine.context.prefix import PrefixView
from engine.context.provenance import ItemKind, Provenance
from engine.events import Figures, FloorBlock, OutboxChanged, ToolDefinition
from engine.message import Source
from engine.privacy import PrivacyClass, PrivatizationLabel

if TYPE_CHECKING:
    from engine.config import ModelEntry

FLOOR_DEFAULT_LABEL = PrivatizationLabel(cls=PrivacyClass.internal)
"""The label of a logged floor block that declared none."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AreaView:
    """One registered Area as the log last recorded it."""

    id: str
    kind: str
    name: str
    life: AreaLifeState
    flow: AreaFlowState
    earliest: int | None  # its effect range in the Context, when it has one
    latest: int | None
    cursor: bool  # the scheduling cursor is on this Area


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorBlockView:
    layer: int
    key: str
    hash: str
    chars: int
    label: PrivatizationLabel
    text: str  # the block as the system prompt carries it

    @property
    def ref(self) -> str:
        """The block's address within its request, as the inspector and the breakdown name it."""
        return f"floor:{self.layer}:{self.key}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestItemView:
    """One Context item the request carried: where it came from, its label and what it cost."""

    index: int  # its position in the Context
    kind: ItemKind
    seq: int | None
    turn: int | None
    source: Source | None
    owner: str | None
    label: PrivatizationLabel
    chars: int
    reserved: bool  # in the reserved lane (a live Area's latest render, promoted, summary)
    text: str  # the item exactly as counted and sent: its compact JSON (`chars` is its length)

    @property
    def ref(self) -> str:
        """The item's address within its request: its position in the Context."""
        return f"item:{self.index}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinitionView:
    """One tool the request offered the model: its definition, its label and what it cost."""

    name: str
    hash: str
    label: PrivatizationLabel
    chars: int
    text: str  # the definition exactly as counted: its compact JSON (`chars` is its length)

    @property
    def ref(self) -> str:
        """The definition's address within its request (a request offers a name once)."""
        return f"tool:{self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class DroppedView:
    """Context items the request left out (a history group the governors dropped), by turn."""

    turn: int | None
    first_seq: int | None
    items: int
    chars: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AssemblyView:
    """The last request assembled: the figures, the floor, and every item, in order."""

    turn: int | None
    figures: Figures
    prefix_digest: str
    floor: tuple[FloorBlockView, ...]
    items: tuple[RequestItemView, ...]
    kept_groups: tuple[int, ...]  # first seq of each history group kept
    egress: PrivacyClass  # the highest class the endpoint accepts
    label: PrivatizationLabel  # the joined label of the request
    dropped: tuple[DroppedView, ...] = ()  # what the Context held that the request left out
    tools: tuple[ToolDefinitionView, ...] = ()  # the tool definitions it offered, in order
    prefix: PrefixView | None = None  # what it repeated of the request before; turn, session

    @property
    def reserved_chars(self) -> int:
        return sum(i.chars for i in self.items if i.reserved)

    @property
    def tool_chars(self) -> int:
        """What the tool definitions cost, beside the budgeted floor and items."""
        return sum(t.chars for t in self.tools)


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxView:
    """What waits for the next safe boundary of the running turn."""

    contexts: tuple[tuple[str, Source], ...]  # (content, source), FIFO
    steering: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PinView:
    id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelView:
    """The model entry the session is bound to, and the one the next turn will use."""

    name: str  # the configured entry
    model_id: str  # the provider's model id of the gateway in use
    provider: str
    grant_epoch: int
    next_name: str  # differs from `name` while a `/model` change waits for the next turn
    egress: PrivacyClass


def outbox_view(changed: OutboxChanged) -> OutboxView:
    """The outbox as its `outbox/changed` reports it, so a front end need not read it back (a
    staged context always has its source)."""
    return OutboxView(
        contexts=tuple((c.content, c.source) for c in changed.contexts if c.source is not None),
        steering=changed.steering,
    )


def model_view(
    name: str, epoch: int, entry: ModelEntry, *, model_id: str, next_name: str
) -> ModelView:
    """The view of entry `name` bound at grant `epoch`, live (the gateway's model id) or as
    replay finds it (the configured one)."""
    return ModelView(
        name=name,
        model_id=model_id,
        provider=entry.provider,
        grant_epoch=epoch,
        next_name=next_name,
        egress=entry.effective_egress(),
    )


def pin_views(pins: Iterable[tuple[str, str]]) -> tuple[PinView, ...]:
    """The views of `pins`, (id, text) pairs in pinning order."""
    return tuple(PinView(id=i, text=t) for i, t in pins)


def item_view(
    index: int, provenance: Provenance, label: PrivatizationLabel, text: str, *, reserved: bool
) -> RequestItemView:
    """The view of the Context's item `index`, whose compact JSON is `text`."""
    return RequestItemView(
        index=index,
        kind=provenance.kind,
        seq=provenance.seq,
        turn=provenance.turn,
        source=provenance.source,
        owner=provenance.owner,
        label=label,
        chars=len(text),
        reserved=reserved,
        text=text,
    )


def floor_view(block: FloorBlock) -> FloorBlockView:
    """The view of a floor block as the log records it (`Block.payload()` for a live one)."""
    return FloorBlockView(
        layer=block.layer,
        key=block.key,
        hash=block.hash,
        chars=len(block.text),
        label=block.label if block.label is not None else FLOOR_DEFAULT_LABEL,
        text=block.text,
    )


def area_view(
    area_id: str,
    name: str,
    life: AreaLifeState,
    flow: AreaFlowState,
    effect: EffectRange | None,
    *,
    cursor: str | None,
) -> AreaView:
    """The view of Area `area_id`, live or as replay recorded it; `cursor` is the id of the
    Area holding the scheduling cursor."""
    return AreaView(
        id=area_id,
        kind=area_id.rpartition("#")[0],
        name=name,
        life=life,
        flow=flow,
        earliest=None if effect is None else effect.earliest,
        latest=None if effect is None else effect.latest,
        cursor=area_id == cursor,
    )


def area_views(coop: CoopContext) -> tuple[AreaView, ...]:
    ranges = coop.ranges  # by Area id
    cursor = coop.cursor_id
    views: list[AreaView] = []
    for area in coop.areas:
        area_id = coop.area_id(area)
        reported = coop.reported_state(area)
        life, flow = reported or (AreaLifeState.retain, AreaFlowState.yielded)
        name = getattr(area, "name", "")
        views.append(
            area_view(
                area_id,
                name if isinstance(name, str) else "",
                life,
                flow,
                ranges.get(area_id),
                cursor=cursor,
            )
        )
    return tuple(views)


def dropped_views(context: Context, sent: Iterable[int], upto: int) -> tuple[DroppedView, ...]:
    """The Context's first `upto` items (what it held at assembly) outside the request, grouped by
    turn in Context order. Computed when a view asks, never per step."""
    chosen = frozenset(sent)
    groups: dict[int | None, list[int]] = {}
    for index in range(min(upto, len(context))):
        if index not in chosen:
            groups.setdefault(context.provenance(index).turn, []).append(index)
    return tuple(
        DroppedView(
            turn=turn,
            first_seq=context.provenance(indices[0]).seq,
            items=len(indices),
            chars=sum(item_chars(context[i]) for i in indices),
        )
        for turn, indices in groups.items()
    )


def tool_views(definitions: Iterable[ToolDefinition]) -> tuple[ToolDefinitionView, ...]:
    """The views of the definitions a request offered (as the Agent kept them, or as replay
    found them in the log by the hashes its `step/start` names)."""
    return tuple(
        ToolDefinitionView(
            name=definition.name,
            hash=definition.hash,
            label=definition.label or PrivatizationLabel.of(PrivacyClass.internal),
            chars=len(definition.text),
            text=definition.text,
        )
        for definition in definitions
    )


def assembly_view(
    assembled: AssembledContext,
    *,
    turn: int | None,
    egress: PrivacyClass,
    dropped: tuple[DroppedView, ...] = (),
    tools: tuple[ToolDefinitionView, ...] = (),
    prefix: PrefixView | None = None,
) -> AssemblyView:
    reserved = frozenset(assembled.reserved_indices)
    items = tuple(
        item_view(index, provenance, label, text, reserved=index in reserved)
        for index, provenance, label, text in zip(
            assembled.indices,
            assembled.provenances,
            assembled.labels,
            map(item_text, assembled.items),
            strict=True,
        )
    )
    floor = tuple(floor_view(block.payload()) for block in assembled.floor)
    return AssemblyView(
        turn=turn,
        figures=assembled.figures,
        prefix_digest=assembled.prefix_digest,
        floor=floor,
        items=items,
        kept_groups=assembled.kept_groups,
        egress=egress,
        label=assembled.label,
        dropped=dropped,
        tools=tools,
        prefix=prefix,
    )
