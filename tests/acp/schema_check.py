"""Every message Trellis sends, checked against the `acp` package's schema models: answers by the
method they answer, notifications and requests by their method."""

from __future__ import annotations

from typing import Any

from acp.schema import (
    CloseSessionResponse,
    CreateTerminalRequest,
    DeleteSessionResponse,
    Error,
    InitializeResponse,
    KillTerminalRequest,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ReadTextFileRequest,
    ReleaseTerminalRequest,
    RequestPermissionRequest,
    ResumeSessionResponse,
    SessionNotification,
    SetSessionConfigOptionResponse,
    TerminalOutputRequest,
    WaitForTerminalExitRequest,
    WriteTextFileRequest,
)
from pydantic import BaseModel

ANSWERS: dict[str, type[BaseModel]] = {
    "initialize": InitializeResponse,
    "session/new": NewSessionResponse,
    "session/load": LoadSessionResponse,
    "session/resume": ResumeSessionResponse,
    "session/close": CloseSessionResponse,
    "session/list": ListSessionsResponse,
    "session/delete": DeleteSessionResponse,
    "session/prompt": PromptResponse,
    "session/set_config_option": SetSessionConfigOptionResponse,
}
REQUESTS: dict[str, type[BaseModel]] = {
    "session/request_permission": RequestPermissionRequest,
    "fs/read_text_file": ReadTextFileRequest,
    "fs/write_text_file": WriteTextFileRequest,
    "terminal/create": CreateTerminalRequest,
    "terminal/output": TerminalOutputRequest,
    "terminal/wait_for_exit": WaitForTerminalExitRequest,
    "terminal/kill": KillTerminalRequest,
    "terminal/release": ReleaseTerminalRequest,
}
NOTIFICATIONS: dict[str, type[BaseModel]] = {"session/update": SessionNotification}
TRELLIS_METHODS = ("_trellis/event",)


def check_outgoing(message: dict[str, Any], asked: dict[Any, str]) -> None:
    """Raise if `message` (sent by Trellis) is not what the schema allows. `asked` maps the ids
    of the requests the client sent to their methods."""
    assert message.get("jsonrpc") == "2.0", message
    method = message.get("method")
    if method is not None:
        assert isinstance(method, str)
        if "id" in message:
            REQUESTS[method].model_validate(message["params"], strict=False)
        elif method in TRELLIS_METHODS:
            params = message["params"]
            assert isinstance(params["sessionId"], str)
            assert {"type", "time"} <= set(params["event"])
        elif method == "session/update":
            check_update(message["params"])
        else:
            NOTIFICATIONS[method].model_validate(message["params"])
        return
    assert "id" in message, message
    if "error" in message:
        Error.model_validate(message["error"])
        assert "result" not in message
        return
    method = asked.get(message["id"])
    if method in ANSWERS:
        ANSWERS[method].model_validate(message["result"])
    else:
        assert isinstance(message["result"], dict), message


def check_update(params: dict[str, Any]) -> None:
    """`session/update` params are a `SessionNotification`, written as the schema writes it: the
    translator builds them as plain values, so a key the model would ignore or name otherwise is
    caught by the round trip. A null is kept where it is sent (`oldText` of a new file)."""
    note = SessionNotification.model_validate(params)
    assert note.model_dump(mode="json", by_alias=True, exclude_unset=True) == params, params
