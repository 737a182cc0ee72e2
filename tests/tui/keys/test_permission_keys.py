"""The permission dialog: each answer's key, as a terminal sends it, on a scripted turn that asks
to write one file after another."""

from __future__ import annotations

import time

from app.tui.screens.permission import PermissionDialog
from tests.terminal import Terminal
from tests.tui.keys.checks import KeyChecks
from tests.tui.keys.conftest import Place

CHECKS = KeyChecks()
FILES = ("allowed", "rejected", "escaped", "session", "after")
"""The files the turn writes, in order: each step answers the dialog about the next one (the
last is allowed by the answer before, with no dialog)."""
QUESTION = "Permission needed: write_file"
KEYS_SETTLE = 0.6
"""Seconds between the dialog showing and a key for it: keys already on their way when it opens
(a person typing steering) must not answer it, so it may ignore the first half second's."""


def write(name: str) -> dict[str, object]:
    call = {"name": "write_file", "arguments": {"path": f"{name}.txt", "content": name}}
    return {"text": "", "tool_calls": [call]}


def answer(terminal: Terminal, name: str, key: str) -> None:
    """Wait for the dialog about `name`, then press `key`."""
    terminal.wait_for(QUESTION)
    terminal.wait_for(f"write {name}.txt")
    time.sleep(KEYS_SETTLE)
    terminal.press(key)


@CHECKS.step(PermissionDialog, "a")
def allow_once(terminal: Terminal) -> None:
    """`a` allows this call: the file is written."""
    answer(terminal, "allowed", "a")
    terminal.wait_for("created allowed.txt")


@CHECKS.step(PermissionDialog, "r")
def reject(terminal: Terminal) -> None:
    """`r` rejects it: the tool reports the denial."""
    answer(terminal, "rejected", "r")
    terminal.wait_for('✗ write_file(path="rejected.txt"')


@CHECKS.step(PermissionDialog, "escape")
def escape_rejects(terminal: Terminal) -> None:
    """Esc rejects as `r` does."""
    answer(terminal, "escaped", "escape")
    terminal.wait_for('✗ write_file(path="escaped.txt"')


@CHECKS.step(PermissionDialog, "s")
def allow_for_the_session(terminal: Terminal) -> None:
    """`s` allows this call and the tool's next ones without asking."""
    answer(terminal, "session", "s")
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
