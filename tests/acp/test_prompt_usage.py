"""A prompt's answer carries the turn's tokens as ACP's `Usage` writes them: parts that do not
overlap (`inputTokens` is the uncached input), `totalTokens` their sum."""

from __future__ import annotations

from app.acp.prompt import turn_usage
from engine.events import StepEnd, TurnStart, Usage, make_event


def test_the_cache_parts_are_their_own_fields_and_the_total_adds_every_part() -> None:
    events = [
        make_event(TurnStart(turn=1), 0, 1.0),
        make_event(
            StepEnd(
                turn=1,
                step=1,
                usage=Usage(
                    input_tokens=100, cache_read_tokens=900, cache_write_tokens=50, output_tokens=20
                ),
            ),
            1,
            2.0,
        ),
        make_event(StepEnd(turn=1, step=2, usage=Usage(input_tokens=10, output_tokens=5)), 2, 3.0),
    ]
    assert turn_usage(events) == {
        "totalTokens": 1085,
        "inputTokens": 110,
        "outputTokens": 25,
        "cachedReadTokens": 900,
        "cachedWriteTokens": 50,
    }
    plain = [
        make_event(StepEnd(turn=1, step=1, usage=Usage(input_tokens=7, output_tokens=3)), 0, 1)
    ]
    assert turn_usage(plain) == {"totalTokens": 10, "inputTokens": 7, "outputTokens": 3}
    assert turn_usage([make_event(StepEnd(turn=1, step=1), 0, 1.0)]) is None
