"""F4's session browser and its delete confirmation: every key, as a terminal sends it, on
sessions stored beforehand (three in this workspace, one in another)."""

from __future__ import annotations

import asyncio
import re

import pexpect

from app.tui.screens.export import ExportDialog, FileField, FormatList
from app.tui.screens.replay import NO_SEQ, ReplayScreen
from app.tui.screens.sessions import ConfirmDelete, SessionBrowser
from engine.gateway.scripted import Reply
from tests.terminal import Terminal
from tests.tui.keys.checks import KeyChecks
from tests.tui.keys.conftest import Place, store_session

CHECKS = KeyChecks()
TITLES = ("first session", "second session", "third session")
"""Stored in this order, an hour apart: the browser lists them newest first."""
ELSEWHERE = "elsewhere session"


def browse(terminal: Terminal, words: str = "") -> str:
    """F4, and `words` typed in the filter; the screen once the browser lists what matches."""
    terminal.press("f4")
    terminal.wait_for("Sessions of")
    if words:
        terminal.write(words)
        terminal.wait_until(
            lambda text: all(t not in text for t in TITLES if t != words),
            what=f"only {words!r} listed",
        )
    return terminal.wait_for("Sessions of")


def count(terminal: Terminal) -> int:
    """How many sessions the browser's heading says it lists."""
    found = re.search(r"Sessions of .*: (\d+)", terminal.text())
    assert found is not None, terminal.text()
    return int(found[1])


@CHECKS.step(SessionBrowser, "down", "up", "enter")
def resume_the_chosen_one(terminal: Terminal) -> None:
    """Down and Up move through the list (newest first) and Enter resumes the chosen session."""
    browse(terminal)
    terminal.wait_until(lambda _: count(terminal) == 3, what="three sessions listed")
    terminal.press("down", "down", "up", "enter")
    terminal.wait_gone("Sessions of")
    terminal.wait_for("█ second session")


@CHECKS.step(SessionBrowser, "ctrl+a")
def every_workspace(terminal: Terminal) -> None:
    """Ctrl+A lists every workspace's sessions, and again this one's."""
    browse(terminal)
    terminal.press("ctrl+a")
    terminal.wait_for("Sessions of every workspace: 4")
    terminal.wait_for(ELSEWHERE)
    terminal.press("ctrl+a")
    terminal.wait_gone(ELSEWHERE)
    assert count(terminal) == 3


@CHECKS.step(SessionBrowser, "escape")
def back(terminal: Terminal) -> None:
    """Esc goes back to the console."""
    terminal.press("escape")
    terminal.wait_gone("Sessions of")
    terminal.wait_for("█ second session")


@CHECKS.step(SessionBrowser, "ctrl+r")
@CHECKS.step(ReplayScreen, "q")
def replay(terminal: Terminal) -> None:
    """Ctrl+R replays the chosen session; q there goes back to the console."""
    browse(terminal, "first session")
    terminal.press("ctrl+r")
    terminal.wait_for(f"seq {NO_SEQ}/")
    terminal.wait_for("first session")
    terminal.press("q")
    terminal.wait_gone(f"seq {NO_SEQ}/")
    terminal.wait_for("█ second session")


@CHECKS.step(SessionBrowser, "tab")
def search_the_text(terminal: Terminal) -> None:
    """Typing searches the sessions' text too; Tab moves to the matches, and Enter there opens
    the replay at the match (the reply, after its prompt)."""
    browse(terminal, "osprey")
    terminal.wait_for("Text matches: 1")
    terminal.press("tab")
    terminal.settle()
    terminal.press("enter")
    terminal.wait_gone("Text matches")
    terminal.wait_until(
        lambda text: "seq " in text and f"seq {NO_SEQ}/" not in text and "osprey" in text,
        what="the replay at the match",
    )
    terminal.press("q")
    terminal.wait_for("█ second session")


@CHECKS.step(SessionBrowser, "ctrl+f")
def fork(terminal: Terminal) -> None:
    """Ctrl+F forks the chosen session and opens the fork."""
    browse(terminal, "first session")
    terminal.press("ctrl+f")
    terminal.wait_for("opening the fork")
    terminal.wait_for("█ first session")


@CHECKS.step(SessionBrowser, "ctrl+e")
@CHECKS.step(ExportDialog, "escape")
@CHECKS.step(FormatList, "enter")
@CHECKS.step(FileField, "enter")
def export(terminal: Terminal) -> None:
    """Ctrl+E asks the format and the file: Esc writes nothing, Enter on the format list writes
    the highlighted format to the file shown, Enter in the file field writes to the file typed."""
    browse(terminal, "third session")
    terminal.press("ctrl+e")
    terminal.wait_for("Export session")
    terminal.press("down")  # JSON
    terminal.wait_for(".json")
    terminal.press("escape")
    terminal.wait_gone("Export session")
    assert not list(terminal.cwd.glob("trellis-*"))
    terminal.press("ctrl+e")
    terminal.wait_for("Export session")
    terminal.press("down")
    terminal.wait_for(".json")
    terminal.press("enter")
    terminal.wait_gone("Export session")
    terminal.wait_for("exported third session to")
    (written,) = terminal.cwd.glob("trellis-*.json")
    assert '"third session"' in written.read_text(encoding="utf-8")
    terminal.press("ctrl+e")
    terminal.wait_for("Export session")
    terminal.press("tab")
    terminal.settle()  # keys typed before the focus moved would go to the list
    terminal.press("ctrl+u")
    terminal.write("third.md")
    terminal.wait_for("third.md")
    terminal.press("enter")
    terminal.wait_gone("Export session")
    assert "third session" in (terminal.cwd / "third.md").read_text(encoding="utf-8")
    terminal.press("escape")
    terminal.wait_gone("Sessions of")


@CHECKS.step(SessionBrowser, "ctrl+d")
@CHECKS.step(ConfirmDelete, "n", "escape", "y")
def delete(terminal: Terminal) -> None:
    """Ctrl+D asks first: n or Esc keep the session, y deletes it."""
    browse(terminal, "third session")
    for keep in ("n", "escape"):
        terminal.press("ctrl+d")
        terminal.wait_for("Delete session")
        terminal.press(keep)
        terminal.wait_gone("Delete session")
        assert count(terminal) == 1
    terminal.press("ctrl+d")
    terminal.wait_for("Delete session")
    terminal.press("y")
    terminal.wait_for("deleted third session")
    browse(terminal, "third session")
    terminal.wait_until(lambda _: count(terminal) == 0, what="the session gone")
    terminal.press("escape")
    terminal.wait_gone("Sessions of")


def leave(terminal: Terminal) -> None:
    """`/q` and Enter: the highlighted command, /quit, runs."""
    terminal.write("/q")
    terminal.wait_for("▸ /quit")
    terminal.press("enter")
    terminal.child.expect(pexpect.EOF, timeout=30)
    assert terminal.close() == 0


def test_every_key_of_the_session_browser(place: Place) -> None:
    elsewhere = place.workspace.parent / "elsewhere"
    elsewhere.mkdir()

    async def stored() -> None:
        for hour, title in enumerate(TITLES):
            reply = "an osprey, once" if title == "second session" else "ok"
            await store_session(place, [(title, [Reply(text=reply)])], start=1.8e9 + 3600 * hour)
        await store_session(place, [(ELSEWHERE, [Reply(text="ok")])], cwd=elsewhere)

    asyncio.run(stored())
    with Terminal([], home=place.home, cwd=place.workspace, columns=120) as terminal:
        terminal.wait_for("Ask the agent")
        CHECKS.run(terminal)
        leave(terminal)
