"""The embedded scripted model: replies, chunking, errors, script files, recording, defaults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.events import Usage
from engine.gateway.base import (
    FinishDelta,
    GatewayError,
    GatewayType,
    ModelRequest,
    NativeContent,
    ProviderStateDelta,
    ReasoningDelta,
    StreamDelta,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    UsageDelta,
)
from engine.gateway.codecs import codec_for
from engine.gateway.script_file import load_script
from engine.gateway.scripted import Reply, ScriptedGateway, ScriptError
from engine.message import USER, Message, Role, Source, ToolCall, ToolResult

CODEC = codec_for(GatewayType.scripted)
TOOLS = (
    ToolSpec("read_file", "Read a file.", {"type": "object"}),
    ToolSpec("list_files", "List a directory.", {"type": "object"}),
)


def prompt(text: str, source: Source = USER) -> NativeContent:
    return CODEC.encode_message(Message(Role.user, text, source))


def request(
    *items: NativeContent, tools: tuple[ToolSpec, ...] = TOOLS, system: str = ""
) -> ModelRequest:
    return ModelRequest(model="scripted", system=system, items=items, tools=tools)


async def play(gateway: ScriptedGateway, req: ModelRequest | None = None) -> list[StreamDelta]:
    return [d async for d in gateway.stream(req or request(prompt("hi")))]


async def drain(gateway: ScriptedGateway, into: list[StreamDelta]) -> None:
    async for delta in gateway.stream(request(prompt("hi"))):
        into.append(delta)


def text_of(deltas: list[StreamDelta]) -> str:
    return "".join(d.text for d in deltas if isinstance(d, TextDelta))


def calls_of(deltas: list[StreamDelta]) -> list[tuple[str, str, dict[str, Any]]]:
    """Tool calls assembled from their fragments, as the agent loop does."""
    calls: dict[int, list[str]] = {}
    for d in deltas:
        if isinstance(d, ToolCallDelta):
            call = calls.setdefault(d.index, ["", "", ""])
            call[0] = call[0] or d.id
            call[1] = call[1] or d.name
            call[2] += d.arguments
    return [(i, n, json.loads(a)) for i, n, a in calls.values()]


# --- scripted replies ---------------------------------------------------------------------------


async def test_replies_play_in_order_streamed_by_words() -> None:
    gateway = ScriptedGateway(
        [Reply("Hello there,  world!", reasoning="Think first."), Reply("Two")]
    )

    first = await play(gateway)
    second = await play(gateway)

    assert first == [
        ReasoningDelta("Think "),
        ReasoningDelta("first."),
        TextDelta("Hello "),
        TextDelta("there,  "),
        TextDelta("world!"),
        UsageDelta(Usage(input_tokens=1, output_tokens=8)),
        FinishDelta("stop"),
    ]
    assert text_of(second) == "Two"
    assert gateway.played == 2
    assert gateway.remaining == 0


async def test_tool_calls_stream_in_fragments_with_generated_ids() -> None:
    long_args = {"path": "docs/a-rather-long-file-name.md", "start_line": 3}
    gateway = ScriptedGateway(
        [
            Reply(
                tool_calls=[
                    ToolCall("", "read_file", long_args),
                    ToolCall("mine", "list_files", {}),
                ]
            ),
            Reply(tool_calls=[ToolCall("", "list_files", {"path": "."})]),
        ]
    )

    deltas = await play(gateway)
    later = await play(gateway)

    fragments = [d for d in deltas if isinstance(d, ToolCallDelta) and d.index == 0]
    assert len(fragments) > 2  # id and name first, then the arguments in pieces
    assert fragments[0] == ToolCallDelta(index=0, id="call_1", name="read_file")
    assert calls_of(deltas) == [("call_1", "read_file", long_args), ("mine", "list_files", {})]
    assert calls_of(later) == [("call_2", "list_files", {"path": "."})]
    assert deltas[-1] == FinishDelta("tool_calls")


async def test_chunk_delay_sleeps_between_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr("engine.gateway.scripted.asyncio.sleep", fake_sleep)
    await play(ScriptedGateway([Reply("one two three", chunk_delay=0.25)]))
    assert slept == [0.25, 0.25]


async def test_errors_raise_after_the_text_with_their_class() -> None:
    gateway = ScriptedGateway(
        [
            Reply("partial answer", error="overloaded", transient=True, status=529),
            Reply(error="bad request"),
            Reply("recovered"),
        ]
    )
    received: list[StreamDelta] = []
    with pytest.raises(GatewayError) as transient:
        await drain(gateway, received)
    assert received == [TextDelta("partial "), TextDelta("answer")]
    assert transient.value.transient
    assert transient.value.status == 529
    assert str(transient.value) == "overloaded"

    with pytest.raises(GatewayError) as permanent:
        await play(gateway)
    assert not permanent.value.transient

    assert text_of(await play(gateway)) == "recovered"


async def test_overrides_for_finish_usage_and_provider_state() -> None:
    gateway = ScriptedGateway(
        [
            Reply(
                "cut",
                finish="length",
                usage=Usage(input_tokens=9, output_tokens=1),
                provider_state={"k": 1},
            )
        ]
    )
    assert (await play(gateway))[-3:] == [
        ProviderStateDelta({"k": 1}),
        UsageDelta(Usage(input_tokens=9, output_tokens=1)),
        FinishDelta("length"),
    ]


async def test_a_spent_script_falls_back_to_the_default_or_raises_when_strict() -> None:
    lenient = ScriptedGateway([Reply("scripted")])
    await play(lenient)
    assert "## Scripted reply" in text_of(await play(lenient))

    strict = ScriptedGateway([Reply("scripted")], strict=True)
    await play(strict)
    with pytest.raises(GatewayError, match="script is spent"):
        await play(strict)
    strict.push(Reply("more"))
    assert text_of(await play(strict)) == "more"


async def test_requests_are_recorded_unless_told_not_to() -> None:
    recording = ScriptedGateway()
    req = request(prompt("hi"), system="sys")
    await play(recording, req)
    assert recording.requests == [req]

    silent = ScriptedGateway(record_requests=False)
    await play(silent, req)
    assert silent.requests == []


def test_reply_rejects_a_negative_delay() -> None:
    with pytest.raises(ValueError, match="chunk_delay"):
        Reply("x", chunk_delay=-1)


# --- script files --------------------------------------------------------------------------------


async def test_json_script_with_replies_key(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            {
                "replies": [
                    {
                        "text": "Reading.",
                        "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}],
                    },
                    {"error": "flaky", "transient": True},
                    {"text": "Done.", "reasoning": "ok", "chunk_delay": 0.0},
                ]
            }
        )
    )
    replies = load_script(path)
    assert replies[0] == Reply("Reading.", tool_calls=[ToolCall("", "read_file", {"path": "a"})])
    assert replies[1] == Reply(error="flaky", transient=True)
    assert replies[2] == Reply("Done.", reasoning="ok")

    gateway = ScriptedGateway(load_script(path))
    assert calls_of(await play(gateway)) == [("call_1", "read_file", {"path": "a"})]


def test_json_script_as_a_top_level_list(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text('[{"text": "a"}, {"text": "b"}]')
    assert load_script(path) == [Reply("a"), Reply("b")]


def test_toml_script(tmp_path: Path) -> None:
    path = tmp_path / "script.toml"
    path.write_text(
        """
[[replies]]
text = "Listing."
[[replies.tool_calls]]
id = "c1"
name = "list_files"
arguments = { path = "src" }

[[replies]]
text = "Bye."
finish = "length"
"""
    )
    assert load_script(path) == [
        Reply("Listing.", tool_calls=[ToolCall("c1", "list_files", {"path": "src"})]),
        Reply("Bye.", finish="length"),
    ]


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("bad.json", "{not json", "not valid JSON"),
        ("bad.toml", "replies = [", "not valid TOML"),
        (
            "bad.json",
            '{"replies": [{"txt": "typo"}]}',
            "replies[0].txt: Extra inputs are not permitted",
        ),
        (
            "bad.json",
            '[{"tool_calls": [{"arguments": {}}]}]',
            "replies[0].tool_calls[0].name: Field required",
        ),
        ("bad.json", '{"replies": [{"chunk_delay": -1}]}', "replies[0].chunk_delay"),
        ("bad.json", '{"answers": []}', "replies: Field required"),
        ("bad.yaml", "replies: []", "must be a .json or .toml file"),
    ],
)
def test_bad_script_files_name_the_file_and_the_problem(
    tmp_path: Path, name: str, content: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ScriptError) as caught:
        load_script(path)
    assert str(caught.value).startswith(str(path))
    assert problem in str(caught.value)


def test_a_missing_script_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read the script"):
        load_script(tmp_path / "nope.json")


# --- the default behaviour -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "call"),
    [
        ("read README.md", ("read_file", {"path": "README.md"})),
        ("Please show me engine/agent/turn.py.", ("read_file", {"path": "engine/agent/turn.py"})),
        ("what's in `notes.txt`?", ("read_file", {"path": "notes.txt"})),
        ("cat Makefile", ("read_file", {"path": "Makefile"})),
        ("What's in src/?", ("list_files", {"path": "src/"})),
        ("list", ("list_files", {"path": "."})),
        ("ls engine", ("list_files", {"path": "engine"})),
        ("Can you list the files in the workspace?", ("list_files", {"path": "."})),
        ("list files under docs", ("list_files", {"path": "docs"})),
    ],
)
async def test_default_calls_read_and_list_tools(
    text: str, call: tuple[str, dict[str, Any]]
) -> None:
    deltas = await play(ScriptedGateway(), request(prompt(text)))
    assert calls_of(deltas) == [("call_1", *call)]
    assert deltas[-1] == FinishDelta("tool_calls")


@pytest.mark.parametrize(
    "text", ["Make a list of ideas", "How do I print hello world?", "read it", "show me how"]
)
async def test_default_does_not_call_tools_for_ordinary_prompts(text: str) -> None:
    deltas = await play(ScriptedGateway(), request(prompt(text)))
    assert calls_of(deltas) == []
    assert text_of(deltas).startswith("## Scripted reply")


async def test_default_needs_the_tool_to_be_offered() -> None:
    deltas = await play(ScriptedGateway(), request(prompt("read README.md"), tools=()))
    assert calls_of(deltas) == []


async def test_default_echoes_the_prompt_and_what_came_with_it() -> None:
    req = request(
        CODEC.encode_message(Message(Role.user, "Pinned note.", Source("plugin", "notes"))),
        prompt("First question"),
        CODEC.encode_assistant("An answer."),
        CODEC.encode_message(Message(Role.user, "A watched file.", Source("area", "watch"))),
        prompt("Explain the design\nbriefly."),
        system="You are Trellis.",
    )
    deltas = await play(ScriptedGateway(), req)
    assert text_of(deltas) == (
        "## Scripted reply\n"
        "\n"
        "You said:\n"
        "\n"
        "> Explain the design\n"
        "> briefly.\n"
        "\n"
        "I was given 5 messages (1 from `area:watch`, 1 from `assistant`, 1 from `plugin:notes`, "
        "2 from `user`), a system prompt of 16 characters and 2 tools.\n"
    )
    assert deltas[-1] == FinishDelta("stop")
    # deterministic: the same request, the same answer
    assert await play(ScriptedGateway(), req) == deltas


async def test_default_without_a_prompt_says_so() -> None:
    deltas = await play(ScriptedGateway(), request(prompt("Injected only.", Source("plugin"))))
    assert "There is no prompt from the user yet." in text_of(deltas)


async def test_default_summarizes_tool_results_instead_of_calling_again() -> None:
    req = request(
        prompt("read README.md and list src"),
        CODEC.encode_assistant(
            "Reading.",
            [
                ToolCall("c1", "read_file", {"path": "README.md"}),
                ToolCall("c2", "list_files", {"path": "src"}),
                ToolCall("c3", "read_file", {"path": "gone.txt"}),
            ],
        ),
        CODEC.encode_tool_result(
            ToolResult("c1", "# Trellis\n\nAn agent console.\n"), name="read_file"
        ),
        CODEC.encode_tool_result(ToolResult("c2", "a.py\nb/\n"), name="list_files"),
        CODEC.encode_tool_result(
            ToolResult("c3", "file 'gone.txt' not found", is_error=True), name="read_file"
        ),
        CODEC.encode_message(Message(Role.user, "Injected after the results.", Source("plugin"))),
    )
    deltas = await play(ScriptedGateway(), req)
    assert calls_of(deltas) == []
    assert text_of(deltas) == (
        "## Result\n"
        "\n"
        "I read `README.md` (3 lines).\n"
        "\n"
        "> # Trellis\n"
        "\n"
        "`src` holds 2 entries: `a.py`, `b/`.\n"
        "\n"
        "`read_file` failed: file 'gone.txt' not found\n"
    )
    assert deltas[-1] == FinishDelta("stop")


async def test_a_new_prompt_after_tool_results_is_answered_afresh() -> None:
    req = request(
        prompt("read a.md"),
        CODEC.encode_assistant("", [ToolCall("c1", "read_file", {"path": "a.md"})]),
        CODEC.encode_tool_result(ToolResult("c1", "A"), name="read_file"),
        CODEC.encode_assistant("I read it."),
        prompt("now read b.md"),
    )
    assert calls_of(await play(ScriptedGateway(), req)) == [
        ("call_2", "read_file", {"path": "b.md"})
    ]


async def test_generated_ids_continue_after_the_calls_in_the_conversation() -> None:
    history = request(
        prompt("go"),
        CODEC.encode_assistant(
            "", [ToolCall("call_1", "list_files", {}), ToolCall("call_2", "x", {})]
        ),
        CODEC.encode_tool_result(ToolResult("call_1", ""), name="list_files"),
        CODEC.encode_tool_result(ToolResult("call_2", ""), name="x"),
    )
    resumed = ScriptedGateway([Reply(tool_calls=[ToolCall("", "list_files", {})])])
    assert calls_of(await play(resumed, history)) == [("call_3", "list_files", {})]
