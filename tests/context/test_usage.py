"""The one token figure (`engine.context.usage`) the status line, `/context` and ACP show."""

from __future__ import annotations

from engine.context.usage import UsageTally, context_usage, estimated_tokens, reply_chars
from engine.events import AssistantMessage, Figures, StepEnd, StepStart, Usage
from engine.message import ToolCall


def test_the_estimate_is_three_characters_a_token_rounded_up() -> None:
    assert [estimated_tokens(n) for n in (0, 1, 3, 4, 3000)] == [0, 1, 1, 2, 1000]


def test_reported_tokens_win_over_the_estimate() -> None:
    figures = Figures(chars=3000, cap=96_000)
    usage = context_usage(figures, Usage(input_tokens=700, output_tokens=40), output_chars=300)
    assert (usage.prompt_tokens, usage.output_tokens, usage.used) == (700, 40, 740)
    assert not usage.estimated


def test_cached_tokens_take_the_window_like_any_input() -> None:
    """A request read mostly from the provider's cache is as large in the window as one that
    was not: the cache changes the price, not the size."""
    figures = Figures(chars=3000, cap=96_000)
    cached = Usage(input_tokens=50, cache_read_tokens=600, cache_write_tokens=50, output_tokens=40)
    usage = context_usage(figures, cached, output_chars=300)
    assert (usage.prompt_tokens, usage.used) == (700, 740)
    tally = UsageTally()
    tally.take(StepStart(turn=1, step=1, figures=figures))
    tally.take(StepEnd(turn=1, step=1, usage=cached))
    assert tally.rate is not None
    assert (tally.rate.tokens, tally.rate.chars) == (700, 3000)
    only_cached = Usage(cache_read_tokens=700)
    assert not context_usage(figures, only_cached).estimated


def test_without_a_report_the_request_and_the_reply_are_estimated() -> None:
    figures = Figures(chars=3000, cap=96_000)
    for usage in (
        context_usage(figures, output_chars=300),
        context_usage(figures, Usage(), output_chars=300),
    ):
        assert (usage.prompt_tokens, usage.output_tokens) == (1000, 100)
        assert usage.estimated


def test_the_size_is_the_models_window_else_the_cap_in_tokens() -> None:
    known = context_usage(Figures(chars=30, cap=587_712, window=200_000))
    assert (known.size, known.window, known.cap_tokens) == (200_000, 200_000, 195_904)
    unknown = context_usage(Figures(chars=30, cap=96_000))
    assert (unknown.size, unknown.window) == (32_000, None)


def test_a_reply_counts_its_text_reasoning_and_call_arguments() -> None:
    message = AssistantMessage(
        turn=1,
        step=1,
        content="abc",
        reasoning="de",
        tool_calls=(ToolCall("c1", "read_file", {"path": "a"}),),
    )
    assert reply_chars(message) == 3 + 2 + len('{"path": "a"}')


def test_the_tally_follows_the_steps_and_totals_the_session() -> None:
    tally = UsageTally()
    assert tally.current() is None
    assert tally.take(StepStart(turn=1, step=1, figures=Figures(chars=300, cap=96_000)))
    assert tally.current() == context_usage(Figures(chars=300, cap=96_000))  # the request alone
    assert not tally.take(AssistantMessage(turn=1, step=1, content="x" * 30))
    assert tally.take(StepEnd(turn=1, step=1))  # nothing reported: estimated
    first = tally.current()
    assert first is not None
    assert (first.prompt_tokens, first.output_tokens, first.estimated) == (100, 10, True)
    tally.take(StepStart(turn=1, step=2, figures=Figures(chars=600, cap=96_000)))
    tally.take(StepEnd(turn=1, step=2, usage=Usage(input_tokens=150, output_tokens=5)))
    second = tally.current()
    assert second is not None
    assert (second.used, second.estimated) == (155, False)
    assert (tally.session_tokens, tally.session_estimated) == (110 + 155, True)
