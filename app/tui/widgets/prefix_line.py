"""How much of the last request repeated the one before: one line for the Budget tab, a fuller
one for the inspector's header, from the `PrefixView` the live agent and a replay both give."""

from __future__ import annotations

from rich.text import Text

from engine.context.prefix import PrefixFigures, PrefixView


def _percent(figures: PrefixFigures) -> str:
    share = figures.share
    return "-" if share is None else f"{share:.0%}"


def _breaks(prefix: PrefixView, *, details: bool) -> str:
    if details:
        return "; ".join(
            f"{b.reason} ({b.detail})" if b.detail else b.reason for b in prefix.breaks
        )
    return ", ".join(b.reason for b in prefix.breaks)


def prefix_line(prefix: PrefixView | None) -> Text:
    """`prefix kept 97% · turn 98% · session 91%` (it fits the side panel's width), and below it
    the planned break that explains a short one; a step logged before the prefix was measured
    says so."""
    if prefix is None or not prefix.step.request_chars:
        return Text("prefix kept: not measured", style="dim")
    text = Text.assemble(
        ("prefix kept ", "dim"),
        _percent(prefix.step),
        (" · turn ", "dim"),
        _percent(prefix.turn),
        (" · session ", "dim"),
        _percent(prefix.session),
    )
    if prefix.breaks:
        text.append(f"\nbreak: {_breaks(prefix, details=False)}", style="yellow")
    return text


def prefix_header(prefix: PrefixView | None) -> Text:
    """The inspector's line: the step's shared characters, the turn's and session's sums, and
    each planned break with its reason."""
    if prefix is None or not prefix.step.request_chars:
        return Text("prefix kept: not measured for this request", style="dim")
    step, turn, session = prefix.step, prefix.turn, prefix.session
    text = Text.assemble(
        ("prefix kept ", "dim"),
        f"{step.prefix_chars:,} of {step.request_chars:,} chars ({_percent(step)})",
        ("   turn ", "dim"),
        f"{_percent(turn)} over {turn.steps} step{'s' if turn.steps != 1 else ''}",
        ("   session ", "dim"),
        f"{_percent(session)} over {session.steps} step{'s' if session.steps != 1 else ''}",
    )
    if prefix.breaks:
        text.append("\nplanned break: ", style="yellow")
        text.append(_breaks(prefix, details=True))
    return text
