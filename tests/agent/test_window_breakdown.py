"""What fills the window (issue 31, part 4): a hand-built request with a part of every category,
broken down in tokens and percent of the window, the shares adding up to the request, estimates
marked, the largest parts named; and `/context`'s lines for it."""

from __future__ import annotations

from engine.agent.views import (
    AssemblyView,
    FloorBlockView,
    RequestItemView,
    ToolDefinitionView,
)
from engine.agent.window_breakdown import Category, window_breakdown
from engine.context.provenance import ItemKind
from engine.context.usage import ContextUsage
from engine.context_report import breakdown_lines
from engine.events import Figures
from engine.message import Source
from engine.privacy import PrivacyClass, PrivatizationLabel

INTERNAL = PrivatizationLabel.of(PrivacyClass.internal)
WINDOW = 10_000


def floor(layer: int, key: str, chars: int) -> FloorBlockView:
    return FloorBlockView(layer=layer, key=key, hash=key, chars=chars, label=INTERNAL, text="")


def tool(name: str, chars: int) -> ToolDefinitionView:
    return ToolDefinitionView(name=name, hash=name, label=INTERNAL, chars=chars, text="")


def item(
    index: int,
    kind: ItemKind,
    chars: int,
    *,
    source: Source | None = None,
    owner: str | None = None,
    turn: int | None = 1,
) -> RequestItemView:
    return RequestItemView(
        index=index,
        kind=kind,
        seq=index,
        turn=turn,
        source=source,
        owner=owner,
        label=INTERNAL,
        chars=chars,
        reserved=False,
        text="",
    )


def request(window: int | None = WINDOW) -> AssemblyView:
    """Every category: each floor layer, built-in tools and two MCP servers' tools, two Areas'
    renders, two injecting sources, the conversation, tool results and summaries."""
    floor_blocks = (
        floor(1, "system_prompt", 600),
        floor(2, "AGENTS.md", 1_500),
        floor(2, "TRELLIS.md", 300),
        floor(3, "environment", 240),
        floor(4, "pin:pin1", 60),
    )
    items = (
        item(0, ItemKind.summary, 900, source=Source("summary"), turn=None),
        item(1, ItemKind.promoted, 150, owner="subtask#2"),
        item(2, ItemKind.message, 120, source=Source("user")),
        item(3, ItemKind.assistant, 330, source=Source("model", "m")),
        item(4, ItemKind.tool_result, 2_400, source=Source("tool", "read_file")),
        item(5, ItemKind.area, 450, source=Source("area", "plan"), owner="plan#1"),
        item(6, ItemKind.area, 90, source=Source("area", "watch:a.txt"), owner="watch#3"),
        item(7, ItemKind.message, 75, source=Source("command", "inject")),
        item(8, ItemKind.message, 45, source=Source("plugin")),
        item(9, ItemKind.message, 30, source=None, turn=2),
    )
    chars = sum(b.chars for b in floor_blocks) + sum(i.chars for i in items)
    return AssemblyView(
        turn=2,
        figures=Figures(chars=chars, cap=27_000, window=window),
        prefix_digest="d",
        floor=floor_blocks,
        items=items,
        kept_groups=(),
        egress=PrivacyClass.internal,
        label=INTERNAL,
        tools=(
            tool("read_file", 660),
            tool("github__search", 500),
            tool("run_shell", 580),
            tool("github__open_issue", 250),
            tool("files__list", 120),
        ),
    )


def test_every_category_in_request_order_with_the_shares_adding_up_to_the_request() -> None:
    breakdown = window_breakdown(request(), usage=reported(3_300))
    assert [(s.name, s.chars) for s in breakdown.shares] == [
        ("system prompt", 600),
        ("instruction files", 1_800),
        ("environment", 240),
        ("tools: built-in", 1_240),
        ("tools: MCP github", 750),
        ("tools: MCP files", 120),
        ("pins", 60),
        ("areas: plan#1", 450),
        ("areas: watch#3", 90),
        ("injected: command:inject", 75),
        ("injected: plugin", 45),
        ("conversation", 480),  # the user's words, the reply and a prompt with no source
        ("tool results", 2_400),
        ("summaries", 1_050),  # a compaction summary and a collected Area's promoted message
    ]
    assert {s.category for s in breakdown.shares} == set(Category)
    assert breakdown.chars == 9_400 == sum(s.chars for s in breakdown.shares)
    # the provider's count is the request's; the shares are it, shared out by characters
    assert breakdown.reported
    assert breakdown.tokens == 3_300
    assert sum(s.tokens for s in breakdown.shares) == 3_300
    tool_results = next(s for s in breakdown.shares if s.category is Category.tool_results)
    assert tool_results.tokens == 843  # 3,300 * 2,400 / 9,400 = 842.55
    assert breakdown.percent(tool_results.tokens) == 843 / WINDOW * 100
    assert (breakdown.size, breakdown.free, breakdown.over) == (WINDOW, 6_700, 0)


def reported(tokens: int, *, estimated: bool = False) -> ContextUsage:
    """A step's tokens as `context_usage` gives them: the provider's, or an estimate."""
    return ContextUsage(
        prompt_tokens=tokens, output_tokens=0, estimated=estimated, window=WINDOW, cap_tokens=9_000
    )


def test_without_a_report_the_request_is_estimated_from_its_characters() -> None:
    breakdown = window_breakdown(request())
    assert not breakdown.reported
    assert breakdown.tokens == 3_134  # 9,400 characters at 3 a token, rounded up
    assert sum(s.tokens for s in breakdown.shares) == breakdown.tokens
    assert breakdown.free_estimated
    # a reported 0 is no report (a cancelled step counted nothing)
    assert window_breakdown(request(), usage=reported(0)) == breakdown


def test_an_estimate_at_the_sessions_rate_covers_the_tool_definitions_too() -> None:
    """The status line's estimate counts the budget's characters (7,290 here: the floor and the
    items) at the session's rate; the breakdown stretches it over the definitions (2,110), so
    the figure does not jump when the provider's report comes."""
    assert request().figures.chars == 7_290
    breakdown = window_breakdown(request(), usage=reported(1_458, estimated=True))
    assert not breakdown.reported
    assert breakdown.tokens == 1_880  # 1,458 * 9,400 / 7,290
    assert sum(s.tokens for s in breakdown.shares) == 1_880


def test_the_largest_parts_are_named_with_their_address_in_the_request() -> None:
    breakdown = window_breakdown(request(), usage=reported(3_300))
    assert [(i.ref, i.name, i.category) for i in breakdown.largest] == [
        ("item:4", "tool result read_file, turn 1", Category.tool_results),
        ("floor:2:AGENTS.md", "AGENTS.md", Category.instruction_files),
        ("item:0", "compaction summary", Category.summaries),
        ("tool:read_file", "tool read_file", Category.tools),
        ("floor:1:system_prompt", "system prompt", Category.system_prompt),
    ]
    assert [i.tokens for i in breakdown.largest] == [843, 527, 316, 232, 211]
    assert len(window_breakdown(request(), top=2).largest) == 2


def test_the_shares_add_up_whatever_the_rounding() -> None:
    """Largest remainders: whole tokens that add up to the request however it divides."""
    for tokens in (1, 7, 13, 999, 3_301, 10_001):
        breakdown = window_breakdown(request(), usage=reported(tokens))
        assert sum(s.tokens for s in breakdown.shares) == tokens


def test_a_request_over_the_window_has_nothing_free() -> None:
    breakdown = window_breakdown(request(window=3_000), usage=reported(3_300))
    assert (breakdown.free, breakdown.over) == (0, 300)
    assert "  over the window by 300 tokens" in breakdown_lines(breakdown)


def test_context_lines_mark_the_estimates() -> None:
    lines = breakdown_lines(window_breakdown(request(), usage=reported(3_300)))
    assert lines[0] == "the window by category (~ shared out by characters):"
    assert "  system prompt                ~211   2.1%" in lines
    assert "  injected: command:inject      ~26   0.3%" in lines
    assert "  tool results                 ~843   8.4%" in lines
    assert "  request                     3,300  33.0% reported" in lines
    assert "  free                        6,700  67.0%" in lines  # the provider's, exact
    assert lines[lines.index("largest:") + 1] == "      ~843  tool result read_file, turn 1"
    estimated = breakdown_lines(window_breakdown(request()))
    assert "  request                    ~3,134  31.3% estimated" in estimated
    assert "  free                       ~6,866  68.7%" in estimated


def test_without_a_window_the_percentages_are_of_the_cap() -> None:
    breakdown = window_breakdown(request(window=None), usage=reported(3_300))
    assert (breakdown.size, breakdown.window_known) == (9_000, False)  # 27,000 chars / 3
    lines = breakdown_lines(breakdown)
    assert lines[1] == "  % of the cap, ~9,000 tokens: the window is unknown"
    assert "  free                       ~5,700  63.3%" in lines  # the cap is itself estimated
