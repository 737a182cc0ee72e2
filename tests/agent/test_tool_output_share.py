"""A tool result fits the request it joins (issue 9): each result of a batch is cut to at most
min(the tool's own limit, 25% of the bound model's cap / the calls in the batch), and a cut read
says the exact line range that continues it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.config import Config, ModelEntry
from engine.context.budget import Budget
from engine.events import ToolResultRecord, TurnEnd
from engine.gateway.scripted import Reply
from engine.message import ToolCall
from tests.agent.harness import opened, payloads

CONTINUE = re.compile(r"continue with start_line=(\d+), end_line=(\d+)\]$")


def read(call_id: str, **arguments: object) -> ToolCall:
    return ToolCall(call_id, "read_file", {"path": "big.txt", **arguments})


def body(result: ToolResultRecord) -> str:
    """The text of a cut read without its marker."""
    text, _, _ = result.content.rpartition("\n[output cut at ")
    return text


@pytest.fixture
def big(tmp_path: Path) -> str:
    """`seq 1 30000`: 168,894 characters, more than the default cap of 96,000."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    text = "".join(f"{n}\n" for n in range(1, 30_001))
    (workspace / "big.txt").write_text(text)
    return text


async def test_reading_a_big_file_completes_with_a_marker_that_continues_it(
    tmp_path: Path, big: str
) -> None:
    script = [Reply(tool_calls=[read("r1")]), Reply(text="read")]
    async with opened(tmp_path, script) as run:
        await run.run("read big.txt")
        events = await run.events()
    assert [end.reason for end in payloads(events, TurnEnd)] == ["completed"]
    (result,) = payloads(events, ToolResultRecord)
    assert not result.is_error
    shown = body(result)
    assert len(shown) <= 96_000 // 4
    assert big.startswith(shown)
    assert shown.endswith("\n")  # whole lines only
    last = int(shown.splitlines()[-1])
    match = CONTINUE.search(result.content)
    assert match is not None
    assert (int(match[1]), int(match[2])) == (last + 1, 2 * last)

    follow = [Reply(tool_calls=[read("r2", start_line=last + 1, end_line=2 * last)])]
    async with opened(tmp_path, [*follow, Reply(text="more")]) as run:
        await run.run("read on")
        (more,) = payloads(await run.events(), ToolResultRecord)
    assert int(more.content.splitlines()[0]) == last + 1  # picks up where the cut was


async def test_the_cut_is_proportional_to_the_batch_and_the_bound_window(
    tmp_path: Path, big: str
) -> None:
    # cap 3 x (10,000 less 2,500 for the reply) = 22,500 characters
    entry = ModelEntry(provider="scripted", context_window=10_000)
    config = Config(default_model="small", models={"small": entry})
    script = [
        Reply(tool_calls=[read("a1")]),
        Reply(text="one"),
        Reply(tool_calls=[read("b1"), read("b2", start_line=9000), read("b3", start_line=20_000)]),
        Reply(text="three"),
    ]
    async with opened(tmp_path, script, config=config) as run:
        await run.run("one read")
        await run.run("three reads")
        events = await run.events()
    assert [end.reason for end in payloads(events, TurnEnd)] == ["completed", "completed"]
    results = {r.call_id: body(r) for r in payloads(events, ToolResultRecord)}
    single = 22_500 // 4
    assert single - 6 < len(results["a1"]) <= single  # lines of at most 6 characters
    for call_id in ("b1", "b2", "b3"):
        assert single // 3 - 6 < len(results[call_id]) <= single // 3


def test_the_limit_is_the_smaller_of_the_tools_and_the_batchs_share() -> None:
    budget = Budget(char_cap=96_000)
    assert budget.tool_output_limit(100_000, 1) == 24_000
    assert budget.tool_output_limit(100_000, 4) == 6_000
    assert budget.tool_output_limit(5_000, 1) == 5_000
    assert Budget(context_window=1_000).tool_output_limit(100_000, 2) == 3 * 750 // 4 // 2
    assert Budget(char_cap=3).tool_output_limit(100_000, 10) == 1  # never zero
