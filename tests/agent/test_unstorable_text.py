"""Text the log cannot hold never wedges a session (issue 9): OS names and words that are not
UTF-8 enter events escaped, and a tool result that still cannot be stored becomes an error the
model reads. Each test takes further turns afterwards and checks what the store holds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.events import ToolResultRecord, TurnEnd, UserMessage
from engine.gateway.scripted import Reply
from engine.message import AdditionalContext, Source, ToolCall
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.tools import Tool, ToolContext, ToolOutput
from tests.agent.harness import Gate, NoArgs, gate_call, opened, payloads, registry_with


@pytest.mark.skipif(os.name != "posix", reason="POSIX names are bytes")
async def test_names_that_are_not_utf8_are_listed_read_and_searched_across_turns(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"latin one\n")
    script = [
        Reply(tool_calls=[ToolCall("c1", "list_files", {"path": "."})]),
        Reply(text="listed"),
        Reply(
            tool_calls=[
                ToolCall("c2", "read_file", {"path": "caf\\xe9.txt"}),
                ToolCall("c3", "search", {"pattern": "latin"}),
            ]
        ),
        Reply(text="read"),
        Reply(text="still here"),
    ]
    async with opened(tmp_path, script) as run:
        for prompt in ("list", "read it", "again"):
            await run.run(prompt)
        events = await run.events()  # read back from the store: everything was flushed
    assert [end.reason for end in payloads(events, TurnEnd)] == ["completed"] * 3
    results = {r.call_id: r for r in payloads(events, ToolResultRecord)}
    assert results["c1"].content == "caf\\xe9.txt"
    assert results["c2"].content == "latin one\n"
    assert results["c3"].content == "caf\\xe9.txt:1: latin one"
    assert not any(r.is_error for r in results.values())


class Undecodable(Tool[NoArgs]):
    """A tool whose result holds a lone surrogate, as OS text decoded by Python does."""

    name = "undecodable"
    description = "Returns text no log can store."
    args_model = NoArgs

    async def run(self, args: NoArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(
            "caf\udce9",
            label=PrivatizationLabel(cls=PrivacyClass.internal),
            additional_contexts=(AdditionalContext("a note from the tool"),),
        )


async def test_a_result_that_cannot_be_stored_becomes_an_error_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    script = [
        Reply(tool_calls=[ToolCall("u1", "undecodable", {})]),
        Reply(text="noted"),
        Reply(text="next turn"),
    ]
    async with opened(tmp_path, script, tools=registry_with(Undecodable())) as run:
        await run.run("go")
        await run.run("again")
        events = await run.events()
        second_request = run.gateway.requests[1]
    assert [end.reason for end in payloads(events, TurnEnd)] == ["completed", "completed"]
    (result,) = payloads(events, ToolResultRecord)
    assert result.is_error
    assert result.content.startswith("The result of undecodable could not be recorded")
    assert "surrogates not allowed" in result.content
    assert "a note from the tool" in [m.content for m in payloads(events, UserMessage)]
    assert "could not be recorded" in str(second_request.items)  # the model reads why


async def test_words_that_are_not_utf8_keep_their_place_as_prompt_steering_and_context(
    tmp_path: Path,
) -> None:
    gate = Gate()
    script = [Reply(text="first"), Reply(tool_calls=[gate_call()]), Reply(text="steered")]
    async with opened(tmp_path, script, tools=registry_with(gate)) as run:
        await run.run("caf\udce9 one")  # the first prompt also becomes the title
        run.agent.send("caf\udce9 two")
        await gate.reached(run.agent)
        run.agent.steer("steer \udcff")
        run.agent.inject(AdditionalContext("context \udcfe", Source("plugin")))
        gate.release.set()
        await run.agent.when_idle()
        events = await run.events()
    assert [end.reason for end in payloads(events, TurnEnd)] == ["completed", "completed"]
    assert [m.content for m in payloads(events, UserMessage)] == [
        "caf\\xe9 one",
        "caf\\xe9 two",
        "steer \\xff",
        "context \\xfe",
    ]
