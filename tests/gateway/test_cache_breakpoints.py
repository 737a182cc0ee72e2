"""The `cache_control` breakpoints an Anthropic request carries, as a loopback server receives
them: the floor (end of the system text, else the last tool), the tail (the last block), a bridge
when the tail is past the look-back from where the previous request ended; never on a thinking
block, never on a prefix below the model's minimum."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from engine.config import ModelEntry
from engine.events import Usage
from engine.gateway import cache_breakpoints
from engine.gateway.anthropic import AnthropicGateway
from engine.gateway.base import GatewayType, ModelRequest, NativeContent, ToolSpec
from engine.gateway.cache_breakpoints import EPHEMERAL, LOOKBACK
from engine.gateway.codecs import codec_for
from engine.gateway.factory import make_gateway
from engine.message import Message, Role, ToolCall, ToolResult
from tests.gateway.fake_http import Canned, FakeServer, sse
from tests.gateway.prompt_cache_model import PromptCache
from tests.gateway.providers import KEY, KEY_ENV

CODEC = codec_for(GatewayType.anthropic)
LONG_SYSTEM = "You are a careful engineer. " * 200  # 5,600 characters: ~1,870 tokens at 3 a token
TOOL = ToolSpec("look", "Look at a path. " * 250, {"type": "object", "properties": {}})
THINKING = {"type": "thinking", "thinking": "Which file?", "signature": "c2ln"}
DONE = sse(
    {"type": "message_start", "message": {"usage": {"input_tokens": 1}}},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
    {"type": "message_stop"},
)


def user(text: str) -> NativeContent:
    return CODEC.encode_message(Message(Role.user, text))


def calls(count: int, *, thinking: bool = False) -> list[NativeContent]:
    """A reply that calls `look` `count` times, and the results that answer it."""
    reply = CODEC.encode_assistant(
        "",
        [ToolCall(f"toolu_{i}", "look", {"path": str(i)}) for i in range(count)],
        provider_state={"thinking": [THINKING]} if thinking else None,
    )
    results = [
        CODEC.encode_tool_result(ToolResult(f"toolu_{i}", f"file {i}"), name="look")
        for i in range(count)
    ]
    return [reply, *results]


async def sent(server: FakeServer, request: ModelRequest, **settings: Any) -> dict[str, Any]:
    """The body the gateway sent for `request`."""
    gateway = AnthropicGateway(base_url=server.base_url, api_key_env=KEY_ENV, **settings)
    server.queue(Canned(chunks=DONE))
    try:
        [_ async for _ in gateway.stream(request)]
    finally:
        await gateway.aclose()
    body = server.seen[-1].body
    assert isinstance(body, dict)
    return body


def marked(body: dict[str, Any]) -> list[str]:
    """Where the body carries breakpoints, in wire order: `tools[i]`, `system`,
    `messages[m][b]`."""
    found: list[str] = []
    for index, tool in enumerate(body.get("tools", [])):
        if "cache_control" in tool:
            found.append(f"tools[{index}]")
    system = body.get("system")
    if isinstance(system, list):
        found += ["system" for block in system if "cache_control" in block]
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(message["content"]):
            if "cache_control" in block:
                assert block["cache_control"] == EPHEMERAL
                assert block["type"] not in ("thinking", "redacted_thinking")
                found.append(f"messages[{m}][{b}]")
    assert len(found) <= 4
    return found


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


async def test_a_short_request_marks_nothing(server: FakeServer) -> None:
    body = await sent(server, ModelRequest(model="m", system="Be brief.", items=(user("hi"),)))
    assert marked(body) == []
    assert body["system"] == "Be brief."


async def test_the_floor_and_the_tail_are_marked(server: FakeServer) -> None:
    request = ModelRequest(
        model="m",
        system=LONG_SYSTEM,
        tools=(TOOL,),
        items=(user("What is here?"), *calls(2, thinking=True), user("And now?")),
    )
    body = await sent(server, request)
    assert body["system"] == [{"type": "text", "text": LONG_SYSTEM, "cache_control": EPHEMERAL}]
    # the floor covers the tools before it: no mark of their own
    assert marked(body) == ["system", "messages[2][2]"]
    assert body["messages"][2]["content"][2] == {
        "type": "text",
        "text": "And now?",
        "cache_control": EPHEMERAL,
    }
    # the thinking block goes back verbatim
    assert body["messages"][1]["content"][0] == THINKING


async def test_without_a_system_text_the_last_tool_is_the_floor(server: FakeServer) -> None:
    request = ModelRequest(model="m", tools=(TOOL, TOOL), items=(user("hi"),))
    body = await sent(server, request)
    assert marked(body) == ["tools[1]", "messages[0][0]"]


async def test_a_tail_past_the_look_back_gets_a_bridge_where_the_last_request_ended(
    server: FakeServer,
) -> None:
    """A reply of 12 calls and their 12 results put the tail 24 blocks past the end of the
    previous request: a bridge there lets the tail's look-back reach what that request wrote."""
    history = (user("Look at everything."), *calls(12), user("Summarize."))
    request = ModelRequest(model="m", system=LONG_SYSTEM, items=history)
    body = await sent(server, request)
    assert len(body["messages"][1]["content"]) + len(body["messages"][2]["content"]) > LOOKBACK
    assert marked(body) == ["system", "messages[0][0]", "messages[2][12]"]

    short = (user("Look at two."), *calls(2), user("Summarize."))
    body = await sent(server, ModelRequest(model="m", system=LONG_SYSTEM, items=short))
    assert marked(body) == ["system", "messages[2][2]"]  # within reach: no bridge


async def test_a_reply_of_thinking_only_leaves_the_tail_on_the_block_before(
    server: FakeServer,
) -> None:
    reply = CODEC.encode_assistant("", provider_state={"thinking": [THINKING]})
    request = ModelRequest(model="m", system=LONG_SYSTEM, items=(user("Think."), reply))
    body = await sent(server, request)
    assert body["messages"][1]["content"] == [THINKING]
    assert marked(body) == ["system", "messages[0][0]"]


async def test_no_mark_below_the_models_minimum(server: FakeServer) -> None:
    """With a minimum of 4,096 tokens the ~1,870-token floor is not marked, but a tail whose
    prefix passes the minimum is."""
    request = ModelRequest(
        model="m",
        system=LONG_SYSTEM,
        items=(user("Read this. " + "x" * 9000), *calls(1), user("Next.")),
    )
    body = await sent(server, request, cache_min_tokens=4096)
    assert body["system"] == LONG_SYSTEM
    assert marked(body) == ["messages[2][1]"]
    body = await sent(server, request, cache_min_tokens=8192)
    assert marked(body) == []


async def test_the_model_entry_sets_the_minimum(server: FakeServer) -> None:
    entry = ModelEntry(
        provider="anthropic", base_url=server.base_url, api_key_env=KEY_ENV, cache_min_tokens=4096
    )
    gateway = make_gateway("claude", entry)
    assert isinstance(gateway, AnthropicGateway)
    server.queue(Canned(chunks=DONE))
    request = ModelRequest(model="m", system=LONG_SYSTEM, items=(user("hi"),))
    try:
        [_ async for _ in gateway.stream(request)]
    finally:
        await gateway.aclose()
    assert server.seen[-1].body["system"] == LONG_SYSTEM  # 1,870 tokens < 4,096: unmarked
    assert ModelEntry(provider="anthropic").cache_min_tokens == 1024


def session_requests() -> list[ModelRequest]:
    """The requests of three turns, one of whose replies calls a tool 15 times at once (30
    blocks past where the request before it ended)."""
    history: list[NativeContent] = []
    requests: list[ModelRequest] = []

    def ask() -> None:
        requests.append(
            ModelRequest(model="m", system=LONG_SYSTEM, tools=(TOOL,), items=tuple(history))
        )

    for turn, width in ((1, 2), (2, 15), (3, 1)):
        history.append(user(f"Turn {turn}: look around."))
        ask()
        history.extend(calls(width))
        ask()
        history.append(CODEC.encode_assistant(f"Done with turn {turn}."))
    return requests


def billed(requests: list[ModelRequest]) -> list[Usage]:
    gateway = AnthropicGateway(base_url="http://127.0.0.1:9", api_key_env=KEY_ENV)
    cache = PromptCache()
    return [cache.bill(gateway.request_body(request)) for request in requests]


def test_each_request_reads_the_whole_request_before_it_from_the_cache() -> None:
    """Billed by a model of the API's cache, every request after the first reads all of the one
    before it, the wide batch's too (the bridge), and writes only what it added."""
    requests = session_requests()
    bills = billed(requests)
    assert bills[0].cache_read_tokens == 0
    assert bills[0].cache_write_tokens == bills[0].prompt_tokens  # the tail covers it all
    for before, after in itertools.pairwise(bills):
        assert after.cache_read_tokens == before.prompt_tokens
        assert after.input_tokens == 0
    read = sum(b.cache_read_tokens for b in bills)
    assert read / sum(b.prompt_tokens for b in bills) > 0.8


def test_without_the_bridge_the_wide_batch_reads_only_the_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests = session_requests()
    bridged = billed(requests)
    monkeypatch.setattr(cache_breakpoints, "LOOKBACK", 10**6)  # never a bridge
    unbridged = billed(requests)
    wide = 3  # the request after the 15 calls
    before = bridged[wide - 1].prompt_tokens
    assert bridged[wide].cache_read_tokens == before
    # only the tools and the system text (the floor's write) are within the tail's look-back
    assert unbridged[wide].cache_read_tokens < before
    assert unbridged[wide].cache_write_tokens > bridged[wide].cache_write_tokens
