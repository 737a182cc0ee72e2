"""The export dialog (Ctrl+E in the session browser): format and file asked, nothing replaced
without a second Enter, a file that cannot be written said in place, Esc writes nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Label

from app.tui.screens.export import ExportDialog, with_format
from app.tui.screens.sessions import SessionBrowser
from replay.export import export as render
from tests.tui.test_replay import stored_session
from tests.tui.test_sessions import NotedApp, browse, until_screen


async def export_dialog(pilot: Pilot[None], session_id: str) -> ExportDialog:
    await browse(pilot)
    await pilot.press(*session_id[:8])
    await pilot.press("ctrl+e")
    await until_screen(pilot, ExportDialog)
    dialog = pilot.app.screen
    assert isinstance(dialog, ExportDialog)
    return dialog


def message(dialog: ExportDialog) -> str:
    return str(dialog.query_one("#message", Label).render())


async def until_message(pilot: Pilot[None], dialog: ExportDialog, start: str) -> str:
    for _ in range(500):
        if message(dialog).startswith(start):
            return message(dialog)
        await pilot.pause(0.01)
    raise AssertionError(f"the dialog never said {start!r}; it says {message(dialog)!r}")


async def test_the_format_is_chosen_with_the_arrows_and_the_file_follows(
    workspace: Path, data: Path
) -> None:
    stored = await stored_session(workspace, data)
    app = NotedApp(workspace, data)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await export_dialog(pilot, stored)
        file = dialog.query_one(Input)
        assert file.value == f"./trellis-{stored[:8]}.md"
        await pilot.press("down")
        assert (dialog.fmt, file.value) == ("json", f"./trellis-{stored[:8]}.json")
        await pilot.press("down")
        assert (dialog.fmt, file.value) == ("html", f"./trellis-{stored[:8]}.html")
        await pilot.press("enter")
        await until_screen(pilot, SessionBrowser)  # back where Ctrl+E was pressed
        written = workspace / f"trellis-{stored[:8]}.html"  # in the workspace, not the cwd
        assert written.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        assert app.noted[-1] == f"exported read notes.txt to {written}"


async def test_a_file_typed_in_the_dialog(workspace: Path, data: Path) -> None:
    stored = await stored_session(workspace, data)
    app = NotedApp(workspace, data)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await export_dialog(pilot, stored)
        await pilot.press("down")  # JSON
        await pilot.press("tab")  # to the file
        assert dialog.focused is dialog.query_one(Input)
        await pilot.press("ctrl+u", *"out/session.json")
        await pilot.press("enter")
        said = await until_message(pilot, dialog, "cannot write")  # no folder `out`
        assert said == f"cannot write {workspace / 'out/session.json'}: No such file or directory"
        assert app.screen is dialog  # still open, to fix the file
        (workspace / "out").mkdir()
        await pilot.press("enter")
        await until_screen(pilot, SessionBrowser)
        text = (workspace / "out" / "session.json").read_text(encoding="utf-8")
        assert stored in text


async def test_an_existing_file_is_replaced_only_on_a_second_enter(
    workspace: Path, data: Path
) -> None:
    stored = await stored_session(workspace, data)
    there = workspace / f"trellis-{stored[:8]}.md"
    there.write_text("keep me\n", encoding="utf-8")
    app = NotedApp(workspace, data)
    async with app.run_test(size=(100, 30)) as pilot:
        dialog = await export_dialog(pilot, stored)
        await pilot.press("enter")
        said = await until_message(pilot, dialog, str(there))
        assert said == f"{there} exists. Enter replaces it; or change the file."
        assert there.read_text(encoding="utf-8") == "keep me\n"
        await pilot.press("down", "up")  # another format and back: the question is withdrawn
        assert message(dialog) == ""
        await pilot.press("enter")
        await until_message(pilot, dialog, str(there))
        assert there.read_text(encoding="utf-8") == "keep me\n"
        await pilot.press("enter")  # the second Enter replaces it
        await until_screen(pilot, SessionBrowser)
        assert "read notes.txt" in there.read_text(encoding="utf-8")


async def test_escape_cancels_and_writes_nothing(workspace: Path, data: Path) -> None:
    stored = await stored_session(workspace, data)
    app = NotedApp(workspace, data)
    async with app.run_test(size=(100, 30)) as pilot:
        await export_dialog(pilot, stored)
        await pilot.press("escape")
        await until_screen(pilot, SessionBrowser)
        await pilot.pause(0.1)
    assert not (workspace / f"trellis-{stored[:8]}.md").exists()
    assert app.noted == []


async def test_the_export_is_written_off_the_event_loop(
    workspace: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the export renders (held here until the screen has been seen to update), the
    console keeps drawing: the render runs in a thread."""
    stored = await stored_session(workspace, data)
    release = threading.Event()
    renders: list[str] = []

    def held(*args: object, **kwargs: object) -> str:
        renders.append(threading.current_thread().name)
        assert release.wait(10), "the test never let the export go on"
        return render(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("app.session_export.export", held)
    console = NotedApp(workspace, data)
    async with console.run_test(size=(100, 30)) as pilot:
        dialog = await export_dialog(pilot, stored)
        await pilot.press("enter")
        await until_message(pilot, dialog, "Writing")
        await pilot.press("enter")  # pressed again while it writes: one export, not two
        await pilot.press("tab")  # the screen still takes keys while it renders
        assert dialog.focused is dialog.query_one(Input)
        release.set()
        await until_screen(pilot, SessionBrowser)
    assert len(renders) == 1
    assert renders[0] != threading.main_thread().name
    assert (workspace / f"trellis-{stored[:8]}.md").exists()


def test_the_extension_follows_the_format_only_when_it_is_a_format_s() -> None:
    assert with_format("./trellis-1.md", "json") == "./trellis-1.json"
    assert with_format("notes/a.html", "md") == "notes/a.md"
    assert with_format("session.txt", "html") == "session.txt"
    assert with_format("no-extension", "md") == "no-extension"
