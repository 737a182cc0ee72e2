"""What `/context` says, in short lines a console shows in a narrow notice and an editor in its
chat: the window and the cap, the last request, and what fills the window by category.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from engine.counts import counted

if TYPE_CHECKING:
    from engine.agent.window_breakdown import WindowBreakdown
    from engine.context.budget import Budget
    from engine.context.usage import ContextUsage
    from engine.events import StepStart

NAME_WIDTH = 24
"""A category's name is cut to this many characters, so a line fits a narrow notice."""

ITEM_WIDTH = 38


def context_report(
    model: str,
    budget: Budget,
    last: tuple[StepStart, ContextUsage] | None,
    breakdown: WindowBreakdown | None = None,
) -> str:
    """The bound model's window, the effective cap and where it comes from, the history window,
    the last request in tokens, as the status line shows it, and `breakdown`, the last request
    by category (None when this process did not assemble it: a resumed session's)."""
    lines = [f"model {model}: {_window_text(budget)}"]
    cap, per_token = budget.cap, budget.chars_per_token
    cap_text = f"cap {cap:,} chars (~{cap // per_token:,} tokens)"
    match budget.cap_source:
        case "window":
            lines += [
                f"{cap_text}, from the window:",
                f"  {budget.output_reserve:,} tokens kept for the reply, {per_token} chars a token",
            ]
        case "configured":
            lines.append(f"{cap_text}, from [context] char_cap")
            if budget.window_cap is not None:
                lines.append(f"  (the window would allow {budget.window_cap:,} chars)")
        case "default":
            lines.append(f"{cap_text}: the default, the window being unknown")
        case _:
            assert_never(budget.cap_source)
    lines.append(f"history: at most {counted(max(budget.turn_window, 0), 'past turn')}")
    if last is None:
        lines.append("last request: none yet")
        return "\n".join(lines)
    start, usage = last
    size = f"{usage.size:,}" if usage.window is not None else f"~{usage.size:,}"
    how = "estimated from chars" if usage.estimated else "reported"
    figures = start.figures
    lines += [
        f"last request, turn {start.turn} step {start.step}: {usage.used:,} of {size} tokens",
        f"  {how}: {usage.prompt_tokens:,} in{_cached(usage)}, {usage.output_tokens:,} out",
        f"  {figures.chars:,} chars sent; past turns kept {figures.groups_kept}, "
        f"dropped {figures.groups_dropped}",
    ]
    if breakdown is None:
        lines.append("by category: after this run's first request")
    else:
        lines += breakdown_lines(breakdown)
    return "\n".join(lines)


def breakdown_lines(breakdown: WindowBreakdown) -> list[str]:
    """The request by category, a line each with its tokens and its percent of the window, then
    free space and the largest single parts. `~` marks an estimate."""
    lines = ["the window by category (~ shared out by characters):"]
    if not breakdown.window_known:
        lines.append(f"  % of the cap, ~{breakdown.size:,} tokens: the window is unknown")
    for share in breakdown.shares:
        lines.append(_row(share.name, f"~{share.tokens:,}", breakdown.percent(share.tokens)))
    approx = "~" if breakdown.free_estimated else ""
    how = "reported" if breakdown.reported else "estimated"
    request = f"{'' if breakdown.reported else '~'}{breakdown.tokens:,}"
    lines.append(f"{_row('request', request, breakdown.percent(breakdown.tokens))} {how}")
    free = breakdown.free
    lines.append(_row("free", f"{approx}{free:,}", breakdown.percent(free)))
    if breakdown.over:
        of = "window" if breakdown.window_known else "cap"
        lines.append(f"  over the {of} by {approx}{breakdown.over:,} tokens")
    if breakdown.largest:
        lines.append("largest:")
        for item in breakdown.largest:
            lines.append(f"  {'~' + format(item.tokens, ','):>8}  {_cut(item.name, ITEM_WIDTH)}")
    return lines


def _row(name: str, tokens: str, percent: float) -> str:
    return f"  {_cut(name, NAME_WIDTH):<{NAME_WIDTH}} {tokens:>8} {percent:5.1f}%"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _window_text(budget: Budget) -> str:
    if budget.generation_window is not None:
        return f"window {budget.generation_window:,} tokens (generation_window)"
    if budget.context_window is not None:
        return f"window {budget.context_window:,} tokens (context_window)"
    return "window unknown (no context_window)"


def _cached(usage: ContextUsage) -> str:
    """The cached parts of the request's tokens, when the provider reported any."""
    if not (usage.cache_read_tokens or usage.cache_write_tokens):
        return ""
    return (
        f" ({usage.cache_read_tokens:,} read from the prompt cache, "
        f"{usage.cache_write_tokens:,} written to it)"
    )
