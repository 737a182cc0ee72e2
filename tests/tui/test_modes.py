"""The permission mode in the console: `/mode` sets it, the status line names it, and a resumed
session that was in approve-all opens in ask and says so in the transcript. (F5 is pressed in a
real terminal: tests/tui/keys/test_main_keys.py.)"""

from __future__ import annotations

from pathlib import Path

from app.tui.widgets.entries import LineEntry
from app.tui.widgets.status_line import StatusLine
from engine.gateway.scripted import Reply
from replay.entries import ModeEntry
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_long_session import opened


def mode_lines(app: ConsoleTestApp) -> list[str]:
    return [
        str(line.render())
        for line in app.main.query(LineEntry)
        if isinstance(line.entry, ModeEntry)
    ]


async def test_approve_all_is_named_and_falls_back_to_ask_on_resume(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text="hello")])
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app, pilot)
        assert app.main.query_one(StatusLine).mode == "ask"
        await send(app, pilot, "hi")
        await settle(app, pilot)
        await send(app, pilot, "/mode approve-all")
        await settle(app, pilot)
        assert app.live.mode == "approve-all"
        assert app.main.query_one(StatusLine).mode == "approve-all"
        assert "mode approve all" in str(app.main.query_one(StatusLine).render())
        assert mode_lines(app) == ["⚑ Mode: approve all"]
        session_id = app.live.session_id

    again = ConsoleTestApp(workspace, data, [], session_id=session_id)
    async with again.run_test(size=(120, 30)) as pilot:
        await opened(again, pilot)
        await pilot.pause()
        assert again.live.mode == "ask"
        assert again.main.query_one(StatusLine).mode == "ask"
        assert mode_lines(again)[-1] == (
            "⚑ Mode: ask (approve all ends when a session is reopened)"
        )
