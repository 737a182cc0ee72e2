"""`/rewind` over ACP against `trellis serve` as a real process (issue 30, ACP): every connection
that has the session open sees the rewind (its message naming the files, the mode and the options
as they are again), and a client that writes the files itself (`fs.writeTextFile`: an editor
with unsaved buffers) gets the files' part refused with the reason while the conversation's part
runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

from acp import connect_to_agent, text_block
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import ClientCapabilities, FileSystemCapabilities
from acp.ws import create_websocket_stream

from tests.acp.ws_peer import WAIT, RecordingClient, bearer, serving
from tests.waiting import until

PLAN = {
    "sessionUpdate": "plan",
    "entries": [{"content": "read them", "status": "pending", "priority": "medium"}],
}


class EditorClient(RecordingClient):
    """A client that declares it reads and writes the workspace's files (an editor)."""

    async def read_text_file(self, path: str, **_: Any) -> Any:
        raise AssertionError(f"nothing in this test reads through the editor: {path}")

    async def write_text_file(self, path: str, **_: Any) -> Any:
        raise AssertionError(f"nothing in this test writes through the editor: {path}")


@asynccontextmanager
async def connected(
    url: str, client: RecordingClient, capabilities: ClientCapabilities
) -> AsyncIterator[ClientSideConnection]:
    transport = await create_websocket_stream(url, headers=bearer())
    connection = connect_to_agent(cast(Client, client), transport)
    try:
        await asyncio.wait_for(
            connection.initialize(protocol_version=1, client_capabilities=capabilities), WAIT
        )
        yield connection
    finally:
        await connection.close()


def since(client: RecordingClient, session_id: str, start: int) -> list[dict[str, Any]]:
    return client.updates.get(session_id, [])[start:]


def said(updates: list[dict[str, Any]]) -> str:
    return "".join(
        u["content"].get("text", "") for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


def mode_option(updates: list[dict[str, Any]]) -> list[str]:
    """The mode each `config_option_update` names, in order."""
    return [
        option["currentValue"]
        for u in updates
        if u["sessionUpdate"] == "config_option_update"
        for option in u["configOptions"]
        if option["id"] == "mode"
    ]


async def test_rewind_reaches_every_connection_and_an_editor_keeps_its_files(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.json"
    replies = [
        {
            "tool_calls": [
                {"name": "run_shell", "arguments": {"command": "printf 'one\\n' > notes.txt"}}
            ]
        },
        {"text": "wrote the notes"},
        {"text": "second answer"},
    ]
    script.write_text(json.dumps({"replies": replies}), encoding="utf-8")
    config = f'default_model = "s"\n[models.s]\nprovider = "scripted"\nscript = "{script}"\n'
    with serving(tmp_path, config=config) as server:
        root = str(server.root)
        notes = server.root / "notes.txt"
        first, second, editor = RecordingClient(), RecordingClient(), EditorClient()
        plain = ClientCapabilities()
        writes = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
        )
        async with (
            connected(server.url, first, plain) as a,
            connected(server.url, second, plain) as b,
            connected(server.url, editor, writes) as c,
        ):
            session_id = (await a.new_session(cwd=root, mcp_servers=[])).session_id
            await a.prompt(session_id=session_id, prompt=[text_block("write the notes")])
            assert notes.read_text() == "one\n"
            await a.prompt(session_id=session_id, prompt=[text_block("/mode accept-edits")])
            await a.prompt(session_id=session_id, prompt=[text_block("/plan add read them")])
            await a.prompt(session_id=session_id, prompt=[text_block("talk")])
            await b.load_session(cwd=root, session_id=session_id, mcp_servers=[])
            await c.load_session(cwd=root, session_id=session_id, mcp_servers=[])
            marks = {
                name: len(client.updates.get(session_id, []))
                for name, client in (("a", first), ("b", second), ("c", editor))
            }

            await a.prompt(session_id=session_id, prompt=[text_block("/rewind 1")])
            assert not notes.exists()  # created by turn 1: a rewind to before it removes it
            for name, client in (("a", first), ("b", second), ("c", editor)):
                await until(
                    lambda client=client, name=name: (
                        "ask"
                        in mode_option(  # type: ignore[misc]
                            since(client, session_id, marks[name])
                        )
                    ),
                    f"{name} got the options back",
                )
                updates = since(client, session_id, marks[name])
                text = said(updates)
                assert "Rewound to turn 1 (code and conversation)" in text, name
                assert "- removed: notes.txt" in text, name
                assert {"sessionUpdate": "current_mode_update", "currentModeId": "ask"} in updates
                assert {"sessionUpdate": "plan", "entries": []} in updates, name
                marks[name] = len(client.updates[session_id])

            # the editor writes the files: its undo takes the conversation back, not the files
            await c.prompt(session_id=session_id, prompt=[text_block("/rewind undo")])
            assert not notes.exists()
            for name, client in (("a", first), ("b", second), ("c", editor)):
                await until(
                    lambda client=client, name=name: (
                        "accept-edits"
                        in mode_option(  # type: ignore[misc]
                            since(client, session_id, marks[name])
                        )
                    ),
                    f"{name} got the undone options",
                )
                updates = since(client, session_id, marks[name])
                text = said(updates)
                assert "Undid the rewind to turn 1 (conversation): the session is as it" in text
                assert PLAN in updates, name
                assert "files not rewound: the editor connected to this session writes" in text
