"""`app.acp.protocol` with plain calls: no event loop, no transport, no session."""

from __future__ import annotations

import ast
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from acp.schema import InitializeRequest, ListSessionsRequest, PromptRequest

from app.acp import protocol as protocol_module
from app.acp import rpc
from app.acp.handlers import METHODS
from app.acp.protocol import AcpProtocol, CancelRequest, Notification, Request, Response
from engine.errors import TrellisError

INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}}


def message(ident: Any, method: str, params: Any = None) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params or {}})


def sent(protocol: AcpProtocol) -> list[dict[str, Any]]:
    return [json.loads(text) for text in protocol.data_to_send()]


def ready(meta: dict[str, Any] | None = None) -> AcpProtocol:
    """A protocol past `initialize` (with `_meta` in the client's capabilities, if given)."""
    protocol = AcpProtocol(METHODS, name="test")
    params: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": {}}
    if meta is not None:
        params["clientCapabilities"]["_meta"] = meta
    request = protocol.receive(message(0, "initialize", params))
    assert isinstance(request, Request)
    protocol.send_result(request.id, {})
    protocol.data_to_send()
    return protocol


def test_the_module_has_no_asyncio() -> None:
    source = Path(protocol_module.__file__).read_text(encoding="utf-8")
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
    }
    assert "asyncio" not in imported


def test_requests_wait_for_initialize_whose_answer_takes_the_client_capabilities() -> None:
    protocol = AcpProtocol(METHODS, name="test")
    assert protocol.receive(message(1, "session/list")) is None
    [early] = sent(protocol)
    assert early["id"] == 1
    assert early["error"]["code"] == rpc.NOT_INITIALIZED
    capabilities = {"fs": {"readTextFile": True}, "_meta": {"trellis/events": True}}
    request = protocol.receive(
        message(2, "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
    )
    assert isinstance(request, Request)
    assert isinstance(request.params, InitializeRequest)
    assert not protocol.initialized  # until its answer goes out
    protocol.send_result(2, {"protocolVersion": 1})
    assert sent(protocol) == [{"jsonrpc": "2.0", "id": 2, "result": {"protocolVersion": 1}}]
    assert protocol.initialized
    assert protocol.wants_events
    assert protocol.client_capabilities is not None
    assert protocol.client_capabilities.fs.read_text_file
    listed = protocol.receive(message(3, "session/list"))
    assert isinstance(listed, Request)
    assert isinstance(listed.params, ListSessionsRequest)


def test_a_failed_initialize_leaves_the_connection_uninitialized() -> None:
    protocol = AcpProtocol(METHODS, name="test")
    protocol.receive(message(1, "initialize", INITIALIZE))
    protocol.send_error(1, RuntimeError("boom"))
    [failed] = sent(protocol)
    assert failed["error"]["code"] == rpc.INTERNAL_ERROR
    assert not protocol.initialized


def test_unknown_methods_and_extensions_not_asked_for_are_not_found() -> None:
    protocol = ready()
    assert protocol.receive(message(1, "session/fly")) is None
    assert protocol.receive(message(2, "_trellis/events", {"sessionId": "s"})) is None
    assert [m["error"]["code"] for m in sent(protocol)] == [rpc.METHOD_NOT_FOUND] * 2
    opted_in = ready({"trellis/events": True})
    assert isinstance(opted_in.receive(message(3, "_trellis/events", {"sessionId": "s"})), Request)


def test_params_that_fit_no_schema_are_answered_here_naming_the_field() -> None:
    protocol = ready()
    assert protocol.receive(message(1, "session/new", {"cwd": 5, "mcpServers": []})) is None
    [answer] = sent(protocol)
    assert answer["id"] == 1
    assert answer["error"]["code"] == rpc.INVALID_PARAMS
    assert "cwd" in answer["error"]["message"]


def test_unreadable_messages_are_answered_with_id_null() -> None:
    protocol = ready()
    for text in ("{not json", "[1, 2]", '{"jsonrpc":"2.0","id":{"x":1},"method":"m"}'):
        assert protocol.receive(text) is None
    codes = [(m["id"], m["error"]["code"]) for m in sent(protocol)]
    assert codes == [
        (None, rpc.PARSE_ERROR),
        (None, rpc.INVALID_REQUEST),
        (None, rpc.INVALID_REQUEST),
    ]


def test_an_id_in_use_by_a_request_in_flight_is_refused() -> None:
    protocol = ready()
    assert isinstance(protocol.receive(message(7, "session/list")), Request)
    assert protocol.receive(message(7, "session/list")) is None
    [refused] = sent(protocol)
    assert refused["error"]["code"] == rpc.INVALID_REQUEST
    protocol.send_result(7, {"sessions": []})
    sent(protocol)
    assert isinstance(protocol.receive(message(7, "session/list")), Request)  # free again


def prompt(ident: int, session_id: str) -> str:
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
    return message(ident, "session/prompt", params)


def cancel(session_id: str) -> str:
    return json.dumps(
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
    )


def test_a_cancel_counts_for_the_prompts_that_arrived_before_it_until_they_are_answered() -> None:
    protocol = ready()
    first = protocol.receive(prompt(1, "s1"))
    assert isinstance(first, Request)
    assert isinstance(first.params, PromptRequest)
    protocol.receive(prompt(2, "s1"))
    assert protocol.prompts("s1") == 2
    assert protocol.prompts("s2") == 0
    notified = protocol.receive(cancel("s1"))
    assert isinstance(notified, Notification)
    assert protocol.prompt_cancelled("s1")
    assert not protocol.prompt_cancelled("s2")
    protocol.send_result(1, {"stopReason": "cancelled"})
    assert protocol.prompt_cancelled("s1")  # the second one has not been answered
    protocol.send_result(2, {"stopReason": "cancelled"})
    assert not protocol.prompt_cancelled("s1")
    assert protocol.prompts("s1") == 0
    protocol.receive(prompt(3, "s1"))
    assert not protocol.prompt_cancelled("s1")  # a cancel is spent with its prompts


def test_a_cancel_with_no_prompt_in_flight_marks_nothing() -> None:
    protocol = ready()
    assert isinstance(protocol.receive(cancel("s1")), Notification)
    protocol.receive(prompt(1, "s1"))
    assert not protocol.prompt_cancelled("s1")


def test_requests_to_the_client_get_their_answers_by_id() -> None:
    protocol = ready()
    first = protocol.send_request("session/request_permission", {"sessionId": "s"})
    second = protocol.send_request("fs/read_text_file", {"sessionId": "s"})
    assert first != second
    assert [m["id"] for m in sent(protocol)] == [first, second]
    answer = protocol.receive(json.dumps({"jsonrpc": "2.0", "id": second, "result": {"x": 1}}))
    assert answer == Response(second, "fs/read_text_file", {"x": 1}, None)
    failed = protocol.receive(
        json.dumps({"jsonrpc": "2.0", "id": first, "error": {"code": -32001, "message": "no"}})
    )
    assert isinstance(failed, Response)
    assert failed.error is not None
    assert failed.error.code == -32001
    again = json.dumps({"jsonrpc": "2.0", "id": first, "result": {}})
    assert protocol.receive(again) is None  # answered once already
    assert sent(protocol) == []


def test_an_answer_too_big_for_the_transport_becomes_an_error_saying_so() -> None:
    protocol = ready()
    protocol.receive(message(1, "session/list"))
    protocol.send_result(1, {"blob": "x" * (rpc.MAX_OUTGOING_BYTES + 1)})
    [answer] = sent(protocol)
    assert answer["error"]["code"] == rpc.INTERNAL_ERROR
    assert "over the 1 MiB limit" in answer["error"]["message"]


@pytest.mark.parametrize(
    ("raised", "code"),
    [
        (RuntimeError("boom"), rpc.INTERNAL_ERROR),
        (TrellisError("refused"), rpc.REFUSED),
    ],
)
def test_what_a_handler_raises_is_mapped_to_an_error_answer(raised: Exception, code: int) -> None:
    protocol = ready()
    protocol.receive(message(1, "session/list"))
    protocol.send_error(1, raised)
    [answer] = sent(protocol)
    assert answer["error"]["code"] == code


def test_nothing_is_queued_once_closed() -> None:
    protocol = ready()
    protocol.send_notification("session/update", {"sessionId": "s", "update": {}})
    protocol.close()
    protocol.send_notification("session/update", {"sessionId": "s", "update": {}})
    assert protocol.data_to_send() == []
    assert protocol.receive(message(1, "session/list")) is None


@pytest.mark.parametrize("version", [None, "1.0", 2, 2.0, "2.0 "])
def test_a_request_whose_jsonrpc_is_not_exactly_2_0_is_invalid_and_not_run(version: Any) -> None:
    protocol = ready()
    request: dict[str, Any] = {"id": 3, "method": "session/list", "params": {}}
    if version is not None:
        request["jsonrpc"] = version
    assert protocol.receive(json.dumps(request)) is None
    [answer] = sent(protocol)
    assert answer["id"] == 3
    assert "result" not in answer
    assert answer["error"]["code"] == rpc.INVALID_REQUEST
    assert "jsonrpc" in answer["error"]["message"]


def test_a_notification_whose_jsonrpc_is_wrong_is_answered_with_id_null() -> None:
    protocol = ready()
    protocol.receive(prompt(1, "s1"))
    wrong = {"jsonrpc": "1.0", "method": "session/cancel", "params": {"sessionId": "s1"}}
    assert protocol.receive(json.dumps(wrong)) is None
    assert not protocol.prompt_cancelled("s1")
    [answer] = sent(protocol)
    assert answer["id"] is None
    assert answer["error"]["code"] == rpc.INVALID_REQUEST


@pytest.mark.parametrize(
    "response",
    [
        {"jsonrpc": "2.0", "id": 999, "result": {}},
        {"jsonrpc": "2.0", "id": "abc", "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": 999, "result": {}, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "1.0", "id": 999, "result": {}},
        {"jsonrpc": "2.0", "id": 999, "error": "nope"},
    ],
)
def test_a_response_to_no_request_sent_is_dropped_and_logged_never_answered(
    response: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    protocol = ready()
    protocol.send_request("fs/read_text_file", {})
    protocol.data_to_send()
    with caplog.at_level(logging.WARNING, logger="app.acp.protocol"):
        assert protocol.receive(json.dumps(response)) is None
    assert sent(protocol) == []
    assert "dropped" in caplog.text


@pytest.mark.parametrize(
    "answer",
    [
        {"jsonrpc": "2.0", "error": "nope"},
        {"jsonrpc": "2.0", "error": {"code": "1", "message": "x"}},
        {"jsonrpc": "2.0", "result": {}, "error": {"code": 1, "message": "x"}},
    ],
)
def test_a_malformed_answer_to_a_request_sent_fails_it_without_answering(
    answer: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    protocol = ready()
    ident = protocol.send_request("session/request_permission", {})
    protocol.data_to_send()
    with caplog.at_level(logging.WARNING, logger="app.acp.protocol"):
        failed = protocol.receive(json.dumps({**answer, "id": ident}))
    assert isinstance(failed, Response)
    assert failed.error is not None
    assert "malformed" in str(failed.error)
    assert sent(protocol) == []
    assert "session/request_permission" in caplog.text


def cancel_request(ident: Any) -> str:
    params = {"requestId": ident}
    return json.dumps({"jsonrpc": "2.0", "method": "$/cancel_request", "params": params})


def test_cancel_request_names_a_request_in_flight_and_marks_a_prompt_cancelled() -> None:
    protocol = ready()
    protocol.receive(message(1, "session/list"))
    protocol.receive(prompt(2, "s1"))
    assert protocol.receive(cancel_request(1)) == CancelRequest(1, "session/list", None)
    assert not protocol.prompt_cancelled("s1")
    assert protocol.receive(cancel_request(2)) == CancelRequest(2, "session/prompt", "s1")
    assert protocol.prompt_cancelled("s1")
    protocol.send_result(1, {"sessions": []})
    assert protocol.receive(cancel_request(1)) is None  # answered: nothing to cancel
    assert protocol.receive(cancel_request(77)) is None
    assert [m["id"] for m in sent(protocol)] == [1]  # a notification is never answered
