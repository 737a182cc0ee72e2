"""A write or an edit shows its recorded change as a diff where `trellis show` and the exports
show the tool call, from the log alone (the file may have changed since)."""

from __future__ import annotations

from pathlib import Path

from app.transcript_text import PLAIN, transcript_text
from engine.gateway.scripted import Reply
from engine.tools import PermissionAnswer, PermissionQuestion, default_registry
from replay.export import export
from replay.transcript import transcript_of
from tests.agent.conftest import FlakyStore, MakeAgent, call


async def allow(question: PermissionQuestion) -> PermissionAnswer:
    return PermissionAnswer.allow_once


async def test_show_and_the_exports_show_each_change_as_a_diff(
    make_agent: MakeAgent, store: FlakyStore, tmp_path: Path
) -> None:
    (tmp_path / "ws" / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (tmp_path / "ws" / ".env").write_text("TOKEN=abc123\n")
    agent = await make_agent(
        [
            Reply(
                tool_calls=[
                    call("write_file", path="src/new.py", content="print(1)\n"),
                    call("edit_file", path="notes.txt", old="beta", new="BETA"),
                    call("edit_file", path=".env", old="abc123", new="xyz789"),
                ]
            ),
            Reply(text="done"),
        ],
        tools=default_registry(),
        responder=allow,
    )
    agent.send("change the files")
    await agent.when_idle()
    (tmp_path / "ws" / "notes.txt").write_text("changed since\n")
    info = await store.info(agent.session_id)
    events = (await store.inspect(agent.session_id)).events

    shown = transcript_text(transcript_of(events).entries, PLAIN)
    assert "created src/new.py" in shown
    assert "--- /dev/null\n    +++ b/src/new.py\n    @@ -0,0 +1,1 @@\n    +print(1)" in shown
    assert "changed notes.txt at line 2" in shown
    assert "     alpha\n    -beta\n    +BETA\n     gamma" in shown
    assert "only its hashes are recorded" in shown
    assert "TOKEN=" not in shown  # the file's text; the call's own arguments are shown as sent

    markdown = export(info, events, "md")
    assert (
        "```diff\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA"
        in markdown
    )
    html = export(info, events, "html")
    assert "Changed notes.txt at line 2" in html
    assert "-beta\n+BETA" in html
