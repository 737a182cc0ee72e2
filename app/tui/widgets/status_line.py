"""The status line: the agent's status, the permission mode, the model, the context against the
model's window, tokens, the session's cost.

Every figure carries its label and the fields are separated, so no two words run together at any
width. The line is laid out by `status_layout`, a pure function of the fields and the width: each
field has a need (`Need`), and when the line is too narrow the least needed fields go first, in
one fixed order, so a new field (a mode, a cost) only has to say how much it is needed.

The order in which fields drop as the line narrows (`Need`, lowest first): the context meter,
the history cap, egress, the mode when it is the usual `ask`, the last step's tokens (with their
cache parts), the session's cost, the session's tokens, the context figure, the note, the model,
a mode other than `ask` (it decides calls without asking, or refuses them), and the status last.
The README's console section says the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType

from rich.cells import cell_len
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from engine.context.usage import ContextUsage
from engine.money import cost_text
from engine.permission_mode import DEFAULT_MODE, MODE_NAMES, PermissionMode

METER_WIDTH = 12
STATUS_STYLE = {
    "idle": "green",
    "running": "bold yellow",
    "waiting": "bold magenta",
    "following": "bold cyan",
    "let go": "bold",
}
MODE_STYLE: dict[PermissionMode, str] = {
    "ask": "",
    "accept-edits": "bold yellow",
    "read-only": "bold cyan",
    "approve-all": "bold red",
}
"""A mode other than ask stands out: it decides calls without asking, or refuses them."""
SEPARATOR = " │ "
ESTIMATED = "~"
"""Marks a token figure estimated from characters (the provider reported none)."""


class Need(IntEnum):
    """How much a field is needed: at a narrow width the lowest go first."""

    meter = 10
    cap = 20
    egress = 30
    usual_mode = 35
    step = 40
    cost = 45
    session = 50
    context = 60
    note = 70
    model = 80
    mode = 85
    status = 90


@dataclass(frozen=True, slots=True)
class StatusField:
    """One field of the status line, in display order."""

    text: Text
    need: Need
    attached: bool = False
    """Follows the field before it after one space, not a separator (the context's meter)."""


def compact_number(value: int) -> str:
    """`1234` as `1.2k`, `96000` as `96k`: the meter must fit at 80 columns."""
    if value < 1000:
        return str(value)
    if value < 10_000:
        return f"{value / 1000:.1f}k"
    if value < 1_000_000:
        return f"{value // 1000}k"
    return f"{value / 1_000_000:.1f}M"


def meter(used: int, cap: int, width: int = METER_WIDTH) -> Text:
    """A bar of `width` cells filled in proportion to `used / cap`, coloured by how full it is."""
    share = 0.0 if cap <= 0 else min(used / cap, 1.0)
    filled = round(share * width)
    style = "green" if share < 0.6 else "yellow" if share < 0.85 else "red"
    return Text.assemble(("█" * filled, style), ("░" * (width - filled), "dim"))


def tokens(value: int, estimated: bool) -> str:
    """`1.2k`, or `~1.2k` when estimated (0 is never marked: nothing was sent yet)."""
    return f"{ESTIMATED if estimated and value else ''}{compact_number(value)}"


def step_tokens(usage: ContextUsage) -> Text:
    """`in 200 read 9.8k write 512 out 51`: the last step's parts as the turn rule names them,
    a cache part only when the provider reported one (an estimate has none)."""
    text = Text.assemble(("in ", "dim"), tokens(usage.input_tokens, usage.estimated))
    for name, value in (("read", usage.cache_read_tokens), ("write", usage.cache_write_tokens)):
        if value:
            text.append(f" {name} ", style="dim")
            text.append(compact_number(value))
    text.append(" out ", style="dim")
    text.append(tokens(usage.output_tokens, usage.estimated))
    return text


def _width(field: StatusField) -> int:
    return cell_len(field.text.plain)


def status_layout(fields: Sequence[StatusField], width: int) -> Text:
    """The fields in their order, joined by `SEPARATOR` (an attached one by a space); while they
    do not fit in `width` cells the least needed is dropped, and a single field still too wide
    is cut with an ellipsis."""
    kept = list(fields)

    def total() -> int:
        return sum(_width(f) for f in kept) + sum(
            1 if f.attached else len(SEPARATOR) for f in kept[1:]
        )

    while len(kept) > 1 and total() > width:
        kept.remove(min(kept, key=lambda f: f.need))
    line = Text(no_wrap=True, overflow="ellipsis")
    for index, field in enumerate(kept):
        if index:
            line.append(" " if field.attached else SEPARATOR, style="dim")
        line.append_text(field.text)
    if line.cell_len > width > 0:
        line.truncate(width, overflow="ellipsis")
    return line


def status_fields(
    *,
    status: str,
    model: str,
    egress: str,
    usage: ContextUsage | None,
    session_tokens: int,
    session_estimated: bool,
    note: str,
    mode: PermissionMode | None = None,
    session_cost: Mapping[str, float] | None = None,
) -> list[StatusField]:
    """What the status line says, as fields in display order (`mode` None: not known yet, the
    session is being opened; `session_cost` per currency, none without a priced step)."""
    fields = [StatusField(Text(f"● {status}", style=STATUS_STYLE.get(status, "")), Need.status)]
    if mode is not None:
        # the default mode gives way early; one that decides without asking, or refuses, stays
        need = Need.usual_mode if mode == DEFAULT_MODE else Need.mode
        fields.append(
            StatusField(Text.assemble(("mode ", "dim"), (MODE_NAMES[mode], MODE_STYLE[mode])), need)
        )
    fields.append(StatusField(Text(model or "…", style="bold"), Need.model))
    if egress:
        fields.append(StatusField(Text.assemble(("egress ", "dim"), egress), Need.egress))
    if usage is not None:
        size = compact_number(usage.size) if usage.window is not None else tokens(usage.size, True)
        fields.append(
            StatusField(
                Text.assemble(
                    ("ctx ", "dim"),
                    f"{tokens(usage.used, usage.estimated)}/{size}",
                    (" tok", "dim"),
                ),
                Need.context,
            )
        )
        fields.append(StatusField(meter(usage.used, usage.size), Need.meter, attached=True))
        if usage.window is not None and usage.cap_tokens < usage.window:
            # the history is cut before the window is full: say where
            fields.append(
                StatusField(
                    Text.assemble(("cap ", "dim"), compact_number(usage.cap_tokens)), Need.cap
                )
            )
        if usage.used:
            fields.append(StatusField(step_tokens(usage), Need.step))
    if session_tokens:
        fields.append(
            StatusField(
                Text.assemble(
                    ("session ", "dim"), tokens(session_tokens, session_estimated), (" tok", "dim")
                ),
                Need.session,
            )
        )
    if session_cost:
        fields.append(
            StatusField(Text.assemble(("cost ", "dim"), cost_text(session_cost)), Need.cost)
        )
    if note:
        fields.append(StatusField(Text(note, style="italic dim"), Need.note))
    return fields


class StatusLine(Widget):
    """Always visible; every field is a reactive the screen sets from the event stream."""

    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    """

    model: reactive[str] = reactive("")
    egress: reactive[str] = reactive("")
    status: reactive[str] = reactive("idle")
    usage: reactive[ContextUsage | None] = reactive(None)
    """The last step's tokens against the model's window (None: not known yet)."""
    session_tokens: reactive[int] = reactive(0)
    session_estimated: reactive[bool] = reactive(False)
    session_cost: reactive[Mapping[str, float]] = reactive(MappingProxyType({}))
    """What the session's steps cost so far, per currency."""
    note: reactive[str] = reactive("")
    mode: reactive[PermissionMode | None] = reactive(None)
    """The session's permission mode (engine/permission_mode.py); None until it is known."""

    def render(self) -> Text:
        fields = status_fields(
            status=self.status,
            model=self.model,
            egress=self.egress,
            usage=self.usage,
            session_tokens=self.session_tokens,
            session_estimated=self.session_estimated,
            session_cost=self.session_cost,
            note=self.note,
            mode=self.mode,
        )
        return status_layout(fields, self.content_size.width)
