"""What fills the model's window: one request broken down by category, in tokens and percent.

It reads an `AssemblyView`, the projection the live Agent and replay share, so `/context`, the
Budget tab and a replayed session give the same figures for the same request. Providers count a
request's tokens as a whole, never per part: the parts are measured in characters (the budget's
count) and the request's tokens, the provider's when it reported them, else estimated, are shared
out in proportion (DESIGN-NOTES, "What fills the window").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import assert_never

from engine.agent.views import AssemblyView, RequestItemView
from engine.context.budget import CHARS_PER_TOKEN
from engine.context.floor import Layer
from engine.context.provenance import ItemKind
from engine.context.usage import ContextUsage, estimated_tokens
from engine.events import Figures

LARGEST_ITEMS = 5
"""How many of the request's largest single parts a breakdown names."""

BUILT_IN = "built-in"
MCP_SEPARATOR = "__"
"""An MCP tool is offered as `<server>__<tool>` (`engine.tools.mcp_schema.tool_name`)."""


class Category(StrEnum):
    """What a part of a request is, in request order."""

    system_prompt = "system prompt"
    instruction_files = "instruction files"
    environment = "environment"
    tools = "tools"
    pins = "pins"
    areas = "areas"
    injected = "injected"
    conversation = "conversation"
    tool_results = "tool results"
    summaries = "summaries"


_ORDER = {category: position for position, category in enumerate(Category)}


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowShare:
    """One category of the request, or one part of it (a tool server, an Area, an injecting
    source): its characters and its share of the request's tokens."""

    category: Category
    part: str  # "" for a category not split further
    chars: int
    tokens: int

    @property
    def name(self) -> str:
        return f"{self.category}: {self.part}" if self.part else str(self.category)


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowItem:
    """One of the request's largest single parts; `ref` addresses it in the inspector."""

    ref: str
    name: str
    category: Category
    chars: int
    tokens: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowBreakdown:
    """A request against the window. `tokens` is the request's size: the provider's count when
    `reported`, else estimated at `CHARS_PER_TOKEN`; the shares always add up to it and are
    estimates either way (shared out by characters)."""

    shares: tuple[WindowShare, ...]
    largest: tuple[WindowItem, ...]
    chars: int
    tokens: int
    reported: bool
    size: int
    """The tokens the percentages are of: the model's window, else the cap in tokens."""
    window_known: bool

    @property
    def free(self) -> int:
        """What the window has left beside the request (never below 0)."""
        return max(self.size - self.tokens, 0)

    @property
    def free_estimated(self) -> bool:
        """`free` is exact only against a known window and a reported request."""
        return not (self.reported and self.window_known)

    @property
    def over(self) -> int:
        """By how many tokens the request exceeds `size` (a reported count may)."""
        return max(self.tokens - self.size, 0)

    def percent(self, tokens: int) -> float:
        return 100 * tokens / self.size if self.size > 0 else 0.0


@dataclass(frozen=True, slots=True)
class _Part:
    ref: str
    name: str
    category: Category
    share: str
    chars: int


def window_breakdown(
    assembly: AssemblyView, *, usage: ContextUsage | None = None, top: int = LARGEST_ITEMS
) -> WindowBreakdown:
    """`assembly` by category. `usage`: the step's tokens as the status line shows them
    (`context_usage`): reported by the provider, else estimated at the session's rate; None
    estimates at `CHARS_PER_TOKEN`."""
    parts = [*_floor_parts(assembly), *_tool_parts(assembly), *map(_item_part, assembly.items)]
    chars = sum(part.chars for part in parts)
    tokens, reported = _request_tokens(assembly.figures, usage, chars)
    by_share: dict[tuple[Category, str], int] = {}
    for part in parts:
        key = (part.category, part.share)
        by_share[key] = by_share.get(key, 0) + part.chars
    keys = sorted(by_share, key=lambda k: (_ORDER[k[0]], k[1] != BUILT_IN))  # stable otherwise
    weights = [by_share[key] for key in keys]
    shares = tuple(
        WindowShare(category=category, part=share, chars=weight, tokens=share_tokens)
        for (category, share), weight, share_tokens in zip(
            keys, weights, _apportion(tokens, weights), strict=True
        )
    )
    ranked = sorted(enumerate(parts), key=lambda entry: (-entry[1].chars, entry[0]))[:top]
    largest = tuple(
        WindowItem(
            ref=part.ref,
            name=part.name,
            category=part.category,
            chars=part.chars,
            tokens=_scaled(part.chars, tokens, chars),
        )
        for _, part in ranked
    )
    figures = assembly.figures
    window = figures.window
    return WindowBreakdown(
        shares=shares,
        largest=largest,
        chars=chars,
        tokens=tokens,
        reported=reported,
        size=window if window is not None else figures.cap // CHARS_PER_TOKEN,
        window_known=window is not None,
    )


def _request_tokens(figures: Figures, usage: ContextUsage | None, chars: int) -> tuple[int, bool]:
    """The request's tokens and whether its provider counted them. An estimate is the status
    line's (`usage`, at the session's rate), stretched from the budget's characters to all of
    the request's (the tool definitions too), so it does not jump when the report comes."""
    if usage is not None and usage.prompt_tokens > 0:
        if not usage.estimated:
            return usage.prompt_tokens, True
        if figures.chars > 0:
            return -(-usage.prompt_tokens * chars // figures.chars), False
    return estimated_tokens(chars), False


def _floor_parts(assembly: AssemblyView) -> Iterable[_Part]:
    for block in assembly.floor:
        layer = Layer(block.layer)
        match layer:
            case Layer.identity:
                category, name = Category.system_prompt, "system prompt"
            case Layer.codex:
                category, name = Category.instruction_files, block.key
            case Layer.environment:
                category, name = Category.environment, "environment"
            case Layer.karma:
                category, name = Category.pins, block.key.replace(":", " ", 1)
            case _:
                assert_never(layer)
        yield _Part(block.ref, name, category, "", block.chars)


def _tool_parts(assembly: AssemblyView) -> Iterable[_Part]:
    for tool in assembly.tools:
        server, separator, _ = tool.name.partition(MCP_SEPARATOR)
        share = f"MCP {server}" if separator and server else BUILT_IN
        yield _Part(tool.ref, f"tool {tool.name}", Category.tools, share, tool.chars)


def _item_part(item: RequestItemView) -> _Part:
    turn = "" if item.turn is None else f", turn {item.turn}"
    source = item.source
    match item.kind:
        case ItemKind.message if source is None or source.is_user:
            category, share, name = Category.conversation, "", "user"
        case ItemKind.message if source is not None and source.kind == "pin":
            # a pin made mid-session waits at the tail until the floor takes it
            category, share, name = Category.pins, "", f"pin {source.name}"
        case ItemKind.message:
            category, share = Category.injected, str(source)
            name = f"injected {source}"
        case ItemKind.assistant:
            category, share, name = Category.conversation, "", "assistant"
        case ItemKind.tool_result:
            category, share = Category.tool_results, ""
            name = f"tool result {source.name}" if source is not None else "tool result"
        case ItemKind.area:
            category, share = Category.areas, item.owner or "unowned"
            name = f"area {share}"
        case ItemKind.summary:
            category, share, name = Category.summaries, "", "compaction summary"
        case ItemKind.promoted:
            category, share, name = Category.summaries, "", f"promoted by {item.owner or 'an Area'}"
        case _:
            assert_never(item.kind)
    return _Part(item.ref, name + turn, category, share, item.chars)


def _apportion(total: int, weights: Sequence[int]) -> list[int]:
    """`total` shared out in proportion to `weights`, in whole numbers that add up to it
    (largest remainder; ties go to the earlier weight)."""
    whole = sum(weights)
    if whole <= 0:
        return [0 for _ in weights]
    shares = [total * weight // whole for weight in weights]
    left = total - sum(shares)
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % whole), i))
    for index in by_remainder[:left]:
        shares[index] += 1
    return shares


def _scaled(chars: int, tokens: int, total_chars: int) -> int:
    """`chars` of `total_chars` in tokens of `tokens`, rounded to the nearest."""
    if total_chars <= 0:
        return 0
    return (2 * chars * tokens + total_chars) // (2 * total_chars)
