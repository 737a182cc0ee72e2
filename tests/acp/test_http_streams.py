"""Where the HTTP transport sends each message (`app.acp.http_streams`), without sockets: the
address read from a serialized message, and the outbox's streams, order and back-pressure."""

from __future__ import annotations

import asyncio

from app.acp import rpc
from app.acp.http_streams import Address, Outbox, addressed, request_key


def wire(message: dict[str, object]) -> bytes:
    return rpc.serialize(message)[0].encode()


def update(session: str, n: int) -> bytes:
    return wire(rpc.notification("session/update", {"sessionId": session, "update": {"n": n}}))


def test_a_session_update_and_a_request_are_addressed_to_their_session() -> None:
    assert addressed(update("s-1", 0)) == Address(session="s-1")
    asking = rpc.request(3, "session/request_permission", {"sessionId": "s-2", "toolCall": {}})
    assert addressed(wire(asking)) == Address(session="s-2")


def test_an_answer_is_addressed_to_the_request_it_answers() -> None:
    assert addressed(wire(rpc.result_message(5, {}))) == Address(
        answers=request_key(5), is_answer=True
    )
    assert addressed(wire(rpc.result_message("5", {}))).answers == request_key("5")
    assert request_key(5) != request_key("5")
    assert addressed(wire(rpc.result_message(None, {}))) == Address(is_answer=True)


def test_a_message_of_another_shape_is_decoded_to_find_its_address() -> None:
    reordered = b'{"method":"fs/read_text_file","jsonrpc":"2.0","id":1,"params":{"path":"a",'
    assert addressed(reordered + b'"sessionId":"s-\\"x"}}') == Address(session='s-"x')
    assert addressed(b'{"jsonrpc":"2.0","method":"x","params":{}}') == Address()
    escaped = b'{"jsonrpc":"2.0","id":"a\\"b","result":{}}'
    assert addressed(escaped).answers == request_key('a"b')


def test_a_session_message_waits_on_the_connection_stream_until_its_own_opens() -> None:
    outbox = Outbox(high_water=1 << 20)
    connection = outbox.attach(None)
    outbox.put("s", update("s", 0))
    outbox.put(None, b"other")
    outbox.put("s", update("s", 1))
    session = outbox.attach("s")
    outbox.put("s", update("s", 2))
    assert outbox.take(connection) == [b"other"]
    assert outbox.take(session) == [update("s", n) for n in range(3)]


def test_what_a_closed_session_stream_left_goes_to_the_connection_stream() -> None:
    outbox = Outbox(high_water=1 << 20)
    connection = outbox.attach(None)
    session = outbox.attach("s")
    outbox.put("s", update("s", 0))
    outbox.detach(session)
    outbox.put("s", update("s", 1))
    assert session.ended
    assert outbox.take(session) == []
    assert outbox.take(connection) == [update("s", 0), update("s", 1)]


def test_a_stream_opened_again_ends_the_first() -> None:
    outbox = Outbox(high_water=1 << 20)
    first = outbox.attach(None)
    second = outbox.attach(None)
    outbox.put(None, b"x")
    outbox.detach(first)  # the first one's writer leaves after the second took over
    assert first.ended
    assert outbox.take(second) == [b"x"]
    assert outbox.streams == 1


async def test_the_writer_waits_for_room_once_high_water_is_reached() -> None:
    outbox = Outbox(high_water=10)
    outbox.put(None, b"0123456789")
    assert not outbox.ready()
    waiting = asyncio.ensure_future(outbox.room())
    await asyncio.sleep(0)
    assert not waiting.done()
    stream = outbox.attach(None)
    assert outbox.take(stream) == [b"0123456789"]
    await asyncio.wait_for(waiting, 1)
    assert outbox.ready()


async def test_closing_lets_the_writer_go_and_drops_what_waits() -> None:
    outbox = Outbox(high_water=1)
    stream = outbox.attach(None)
    outbox.put(None, b"xx")
    waiting = asyncio.ensure_future(outbox.room())
    outbox.close()
    await asyncio.wait_for(waiting, 1)
    assert stream.ended
    assert (outbox.size, outbox.take(stream)) == (0, [])
    outbox.put(None, b"after")
    assert outbox.size == 0
