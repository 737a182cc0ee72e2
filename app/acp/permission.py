"""`session/request_permission`: an engine permission question as ACP asks it, and the client's
answer back as a `PermissionAnswer`."""

from __future__ import annotations

from typing import Any

from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from app.acp.feed import PREVIEWED
from engine.tools.permission import PermissionAnswer, PermissionQuestion
from replay.acp import AcpProjection

OPTIONS = (
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Always reject", kind="reject_always"),
)

ANSWERS = {
    "allow_once": PermissionAnswer.allow_once,
    "allow_always": PermissionAnswer.allow_always,
    "reject_once": PermissionAnswer.deny_once,
    "reject_always": PermissionAnswer.deny_always,
}


def permission_request(
    session_id: str, question: PermissionQuestion, workspace: str
) -> RequestPermissionRequest:
    """The question, with the tool call shown as its `tool_call` update showed it (kind,
    locations, diff), through the same translator. A write or an edit leaves its content out:
    the client already holds the whole file's diff the feed sent (`PREVIEWED`), which a client
    that merges the question's fields into the call would otherwise replace with the input's."""
    shown = AcpProjection(workspace).tool_call(question.call_id, question.tool, question.arguments)
    del shown["sessionUpdate"]  # the rest is a `ToolCallUpdate`, pending
    if question.tool in PREVIEWED:
        shown.pop("content", None)
    return RequestPermissionRequest(
        session_id=session_id,
        tool_call=ToolCallUpdate.model_validate(shown),
        options=list(OPTIONS),
    )


def answer_of(result: Any) -> PermissionAnswer:
    """The client's choice; a cancelled outcome or an unknown option denies the call once."""
    response = RequestPermissionResponse.model_validate(result)
    outcome = response.outcome
    if isinstance(outcome, DeniedOutcome):
        return PermissionAnswer.deny_once
    assert isinstance(outcome, AllowedOutcome)
    return ANSWERS.get(outcome.option_id, PermissionAnswer.deny_once)
