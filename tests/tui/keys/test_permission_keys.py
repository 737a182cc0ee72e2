"""The permission dialog: each of its keys, as a terminal sends it, on a scripted turn that asks to
write one file after another; what each answer did is seen on the tool's card."""

from __future__ import annotations

import time

from app.tui.screens.permission import GUARD_SECONDS, PermissionDialog
from tests.terminal import Terminal
from tests.tui.keys.checks import KeyChecks
from tests.tui.keys.conftest import Place

CHECKS = KeyChecks()
FILES = ("allowed", "moved", "round", "scrolled", "escaped", "session", "after")
"""The files the turn writes, in order: each step answers the dialog about the next one (the
last is allowed by the answer before, with no dialog)."""
ROWS = 120
"""Lines of `scrolled.txt`, each changed: its diff is far taller than the dialog."""
QUESTION = "Permission needed: write_file"


def write(name: str) -> dict[str, object]:
    content = name if name != "scrolled" else "".join(f"ROW {n:03}\n" for n in range(1, ROWS + 1))
    call = {"name": "write_file", "arguments": {"path": f"{name}.txt", "content": content}}
    return {"text": "", "tool_calls": [call]}


def asked(terminal: Terminal, name: str) -> None:
    """Wait for the dialog about `name`, and out its first moments (keys then are not taken:
    they may have been typed before it showed)."""
    terminal.wait_for(QUESTION)
    terminal.wait_for(f"{name}.txt")
    time.sleep(GUARD_SECONDS + 0.1)


@CHECKS.step(PermissionDialog, "a")
def allow_once(terminal: Terminal) -> None:
    """`a` allows this call: the file is written."""
    asked(terminal, "allowed")
    terminal.press("a")
    terminal.wait_for("created allowed.txt")


@CHECKS.step(PermissionDialog, "right", "enter")
def move_right_and_choose(terminal: Terminal) -> None:
    """→ moves from Allow once to the next answer, and again to Reject; Enter takes it."""
    asked(terminal, "moved")
    terminal.press("right", "right", "enter")
    terminal.wait_for('✗ write_file(path="moved.txt"')


@CHECKS.step(PermissionDialog, "tab", "shift+tab", "left", "r")
def round_and_back(terminal: Terminal) -> None:
    """Tab goes round the answers and Shift+Tab back, ← to the one before: back on Allow once
    (Enter would allow); then `r` rejects."""
    asked(terminal, "round")
    terminal.press("tab", "tab", "shift+tab", "left")
    terminal.press("r")
    terminal.wait_for('✗ write_file(path="round.txt"')


@CHECKS.step(PermissionDialog, "pagedown", "pageup", "down", "up")
def scroll_the_change(terminal: Terminal) -> None:
    """PgDn/PgUp scroll the change a page, ↓/↑ a line, with the answers still on screen."""
    asked(terminal, "scrolled")
    terminal.wait_for("+ ROW 001")
    terminal.press("down")
    terminal.wait_gone("+ ROW 001")
    terminal.press("up")
    terminal.wait_for("+ ROW 001")
    terminal.press("pagedown")
    # the next page's rows, not the first frame without row 1 (a loaded machine can show one
    # drawn between the two pages)
    screen = terminal.wait_until(
        lambda text: "+ ROW 001" not in text and "+ ROW 030" in text, what="a page down"
    )
    assert "Allow once" in screen
    terminal.press("pageup")
    terminal.wait_for("+ ROW 001")
    terminal.press("r")
    terminal.wait_for('✗ write_file(path="scrolled.txt"')


@CHECKS.step(PermissionDialog, "escape")
def escape_rejects(terminal: Terminal) -> None:
    """Esc rejects as `r` does."""
    asked(terminal, "escaped")
    terminal.press("escape")
    terminal.wait_for('✗ write_file(path="escaped.txt"')


@CHECKS.step(PermissionDialog, "s")
def allow_for_the_session(terminal: Terminal) -> None:
    """`s` allows this call and the tool's next ones without asking."""
    asked(terminal, "session")
    terminal.press("s")
    terminal.wait_for("created session.txt")
    terminal.wait_for("created after.txt")
    terminal.wait_for("All written.")
    assert QUESTION not in terminal.text()


def test_every_key_of_the_permission_dialog(place: Place) -> None:
    script = place.script(*(write(name) for name in FILES), {"text": "All written."})
    with Terminal(
        ["--script", str(script)], home=place.home, cwd=place.workspace, rows=50, columns=120
    ) as terminal:
        terminal.wait_for("Ask the agent")
        terminal.write("write the files")
        terminal.press("enter")
        CHECKS.run(terminal)
    written = sorted(path.stem for path in place.workspace.glob("*.txt"))
    assert written == ["after", "allowed", "long", "notes", "session"]
