"""The status line: model and egress class, agent status, the context meter and token counts."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

METER_WIDTH = 12
STATUS_STYLE = {
    "idle": "green",
    "running": "bold yellow",
    "waiting": "bold magenta",
    "following": "bold cyan",
    "let go": "bold",
}


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
    chars: reactive[int] = reactive(0)
    cap: reactive[int] = reactive(0)
    step_tokens: reactive[int] = reactive(0)
    session_tokens: reactive[int] = reactive(0)
    note: reactive[str] = reactive("")

    def render(self) -> Text:
        status = Text(f"● {self.status}", style=STATUS_STYLE.get(self.status, ""))
        parts: list[Text | str | tuple[str, str]] = [
            (self.model or "…", "bold"),
            (f" [{self.egress}]" if self.egress else "", "dim"),
            "  ",
            status,
            "  ctx ",
            meter(self.chars, self.cap),
            f" {compact_number(self.chars)}/{compact_number(self.cap) if self.cap else '?'}",
            ("  tok ", "dim"),
            f"{compact_number(self.step_tokens)}/{compact_number(self.session_tokens)}",
        ]
        if self.note:
            parts += ["  ", (self.note, "italic dim")]
        return Text.assemble(*parts, no_wrap=True, overflow="ellipsis")
