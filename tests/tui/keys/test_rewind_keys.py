"""Rewind through a terminal: Esc twice on an empty prompt while idle opens the list of prompts,
Enter asks what to take back, `o` overwrites the files changed since, Esc backs out of each;
the rewind puts the files back and the prompt in the input. Scripted replies on the offline
model (`--script`): turn 1 writes a.txt, turn 2 runs a command that appends to it and creates
b.txt."""

from __future__ import annotations

import re

from app.tui.screens.rewind import RewindDialog, RewindList, RewindTable
from tests.terminal import Terminal
from tests.tui.keys.checks import KeyChecks
from tests.tui.keys.conftest import Place
from tests.tui.keys.test_main_keys import prompt_lines

CHECKS = KeyChecks()
REPLIES: tuple[dict[str, object], ...] = (
    {
        "text": "Writing.",
        "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "one\n"}}],
    },
    {"text": "Wrote a.txt."},
    {
        "text": "Running.",
        "tool_calls": [
            {
                "name": "run_shell",
                "arguments": {"command": "echo two >> a.txt && echo new > b.txt"},
            }
        ],
    },
    {"text": "Ran it."},
)
LIST_HEADER = "Go back to just before a prompt"
"""The list's first words: on screen while the list is open."""
CHOICE = "Code and conversation"


def send(terminal: Terminal, text: str, done: str) -> None:
    terminal.write(text)
    terminal.press("enter")
    terminal.wait_for(done)


def open_list(terminal: Terminal) -> str:
    """Esc twice on the empty prompt: the list, the newest prompt first."""
    terminal.press("escape", "escape")
    terminal.wait_for(LIST_HEADER)
    return terminal.settle()  # drawn whole, the transcript beneath gone


@CHECKS.step(RewindList, "escape")
def two_turns_then_esc_esc_opens_the_list(terminal: Terminal) -> None:
    """Two turns change files (the shell card and the turn rule list them); Esc twice opens the
    list of prompts with their files, Esc closes it."""
    send(terminal, "/mode approve-all", "approve all")
    send(terminal, "write a", "Wrote a.txt.")
    send(terminal, "run it", "Ran it.")
    screen = terminal.wait_for("2 files +2 -0")
    assert "changed a.txt (+1 -0)" in screen
    screen = open_list(terminal)
    rows = [line for line in screen.splitlines() if re.search(r"\d+ files? \+\d+ -\d+", line)]
    assert "run it" in rows[0]
    assert "2 files +2 -0" in rows[0]
    assert "1 file +1 -0" in rows[1]
    terminal.press("escape")
    terminal.wait_gone(LIST_HEADER)


@CHECKS.step(RewindDialog, "escape", "o")
def the_dialog_says_what_will_change_and_esc_backs_out(terminal: Terminal) -> None:
    """Enter on turn 2: what the rewind will write and remove, and a file changed since
    (b.txt, edited here) kept unless `o`; Esc goes back to the list, and the files stay."""
    (terminal.cwd / "b.txt").write_text("mine\n", encoding="utf-8")
    open_list(terminal)
    terminal.press("enter")
    screen = terminal.wait_for(CHOICE)
    assert "Writes back (1):" in screen
    assert "Changed since by someone else, kept as they are unless overwritten (1):" in screen
    terminal.press("o")
    terminal.wait_for("Changed since by someone else, overwritten (1):")
    terminal.press("escape")
    terminal.wait_gone(CHOICE)
    terminal.wait_for(LIST_HEADER)
    terminal.press("escape")
    terminal.wait_gone(LIST_HEADER)
    assert (terminal.cwd / "b.txt").read_text(encoding="utf-8") == "mine\n"


@CHECKS.step(RewindTable, "enter")
def enter_rewinds_code_and_conversation(terminal: Terminal) -> None:
    """Esc Esc, Enter on turn 2, Enter on "Code and conversation": a.txt is as turn 1 left it,
    b.txt (someone else's since) is kept, the prompt is back in the input and the transcript
    says so."""
    open_list(terminal)
    terminal.press("enter")
    terminal.wait_for(CHOICE)
    terminal.press("enter")
    terminal.wait_for("Rewound to turn 2 (code and conversation)")
    terminal.wait_until(lambda _: prompt_lines(terminal) == ["run it"], what="the prompt back")
    assert (terminal.cwd / "a.txt").read_text(encoding="utf-8") == "one\n"
    assert (terminal.cwd / "b.txt").read_text(encoding="utf-8") == "mine\n"


def test_every_key_of_the_rewind_screens(place: Place) -> None:
    script = place.script(*REPLIES)
    with Terminal(
        ["--script", str(script)], home=place.home, cwd=place.workspace, columns=140, rows=40
    ) as terminal:
        terminal.wait_for("Ask the agent")
        CHECKS.run(terminal)
