"""app.acp.rpc's encoding of outgoing messages: `session/load`'s encoder writes each update's
notification byte for byte as `serialize` writes it."""

from __future__ import annotations

import json
from typing import Any

from app.acp import rpc

UPDATES: list[dict[str, Any]] = [
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "plain"}},
    {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": 'é "q" \n \u2028 😀'},
    },
    {"sessionUpdate": "usage_update", "used": 3, "size": 10, "_meta": {"trellis/usage": {}}},
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lone \ud800"}},
    {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "t", "rawInput": {"n": 1.5}},
]


def test_an_encoded_update_is_what_serialize_writes_for_its_notification() -> None:
    for session_id in ("0123abcd", "é-session", "lone-\udc00"):
        encoded = rpc.UpdateEncoder(session_id).encode(iter(UPDATES))
        expected = [
            rpc.serialize(
                rpc.notification("session/update", {"sessionId": session_id, "update": update})
            )[0].encode("utf-8")
            for update in UPDATES
        ]
        assert encoded == expected
        for frame in encoded:  # text with a lone surrogate goes out escaped, as UTF-8 can carry
            assert json.loads(frame)["params"]["sessionId"] == session_id
