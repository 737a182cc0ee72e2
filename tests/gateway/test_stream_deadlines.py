"""Stream deadlines, the same for every network provider: a response that sends bytes but no
events (keep-alive comments, blank lines, garbage, Anthropic pings) ends, transient, naming the
deadline that expired. Deadlines are fractions of a second so the tests run fast; no assertion
is made on time, only on which deadline ended the stream."""

from __future__ import annotations

from engine.gateway.anthropic import AnthropicGateway
from engine.gateway.base import Gateway, StreamDelta, TextDelta
from engine.gateway.deadlines import DeadlineExceededError, StreamDeadlines
from tests.gateway.fake_http import Canned, FakeServer, sse
from tests.gateway.providers import KEY_ENV, Provider, failure

SHORT = 0.2
"""A deadline the tests let expire."""
LONG = 30.0
"""A deadline the tests never reach: it only stops a broken test."""

KEEPALIVE = b": keep-alive\n\n"


def deadlines(*, first: float = LONG, idle: float = LONG, request: float = LONG) -> StreamDeadlines:
    return StreamDeadlines(first_event=first, idle=idle, request=request)


async def expiry(gateway: Gateway) -> tuple[DeadlineExceededError, list[StreamDelta]]:
    """The deadline the stream ends with, and what it delivered before it."""
    error, received = await failure(gateway)
    assert isinstance(error, DeadlineExceededError), error
    return error, received


def make(provider: Provider, server: FakeServer, limits: StreamDeadlines) -> Gateway:
    return provider.make(base_url=server.base_url, api_key_env=KEY_ENV, deadlines=limits)


async def test_keep_alive_comments_forever_expire_the_first_event_deadline(
    server: FakeServer, provider: Provider
) -> None:
    server.queue(Canned(chunks=[KEEPALIVE], trickle=KEEPALIVE))
    error, received = await expiry(make(provider, server, deadlines(first=SHORT)))
    assert error.transient
    assert (error.setting, error.seconds) == ("first_event_timeout", SHORT)
    assert "first_event_timeout = 0.2" in str(error)
    assert str(error).startswith(provider.name)
    assert received == []


async def test_keep_alive_after_events_expires_the_between_events_deadline(
    server: FakeServer, provider: Provider
) -> None:
    server.queue(Canned(chunks=provider.partial, trickle=KEEPALIVE + b"\n\n"))
    error, received = await expiry(make(provider, server, deadlines(idle=SHORT)))
    assert error.transient
    assert error.setting == "idle_timeout"
    assert "idle_timeout = 0.2" in str(error)
    assert received == [TextDelta("Hel")]


async def test_a_stall_mid_stream_expires_the_between_events_deadline(
    server: FakeServer, provider: Provider
) -> None:
    server.queue(Canned(chunks=provider.partial, stall=True))
    error, received = await expiry(make(provider, server, deadlines(idle=SHORT)))
    assert error.setting == "idle_timeout"
    assert received == [TextDelta("Hel")]


async def test_garbage_lines_are_no_events(server: FakeServer, provider: Provider) -> None:
    server.queue(Canned(trickle=b"\x00\xffnot a field at all\n"))
    error, _ = await expiry(make(provider, server, deadlines(first=SHORT)))
    assert error.setting == "first_event_timeout"


async def test_no_response_head_expires_the_first_event_deadline(
    server: FakeServer, provider: Provider
) -> None:
    server.queue(Canned(hold=True))
    error, _ = await expiry(make(provider, server, deadlines(first=SHORT)))
    assert error.setting == "first_event_timeout"


async def test_events_reset_the_between_events_deadline_until_the_request_deadline(
    server: FakeServer, provider: Provider
) -> None:
    # the partial stream's last event, again and again, far more often than the between-events
    # deadline: only the whole-request deadline can end it
    server.queue(Canned(chunks=provider.partial, trickle=provider.partial[-1]))
    error, received = await expiry(make(provider, server, deadlines(idle=0.4, request=0.6)))
    assert error.setting == "request_timeout"
    assert "request_timeout = 0.6" in str(error)
    assert received[0] == TextDelta("Hel")
    assert len(received) > 2


async def test_anthropic_pings_are_keep_alive(server: FakeServer) -> None:
    ping = sse({"type": "ping"}, event_names=["ping"])[0]
    server.queue(Canned(chunks=[ping], trickle=ping))
    gateway = AnthropicGateway(
        base_url=server.base_url, api_key_env="", deadlines=deadlines(first=SHORT)
    )
    error, _ = await expiry(gateway)
    assert error.setting == "first_event_timeout"
