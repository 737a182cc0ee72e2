"""The permission dialog in the real `trellis`, through a terminal: each answer key as the terminal
sends it, and keys that arrive as the dialog opens answer nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pexpect

from app.tui.screens.permission import GUARD_SECONDS
from tests.terminal import Terminal

NOTES = "".join(f"line {n}: value {n * 7}\n" for n in range(1, 31))


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments}


def turns(*calls: dict[str, Any]) -> dict[str, Any]:
    """A reply calling each tool in turn, then a reply saying which turn ended ("after N")."""
    replies: list[dict[str, Any]] = []
    for number, tool_call in enumerate(calls, 1):
        replies += [{"text": f"call {number}", "tool_calls": [tool_call]}]
        replies += [{"text": f"after {number}"}]
    return {"replies": replies}


def ask(terminal: Terminal, prompt: str, tool: str, *, in_flight: str = "") -> str:
    """Send `prompt` and wait for the dialog asking for `tool`; the screen it shows once drawn
    whole. `in_flight` is typed the moment the dialog shows, as a person still typing would."""
    terminal.write(prompt)
    terminal.press("enter")
    terminal.wait_for(f"Permission needed: {tool}")
    terminal.write(in_flight)
    return terminal.wait_until(
        lambda text: "reading" not in text and "r/esc Reject" in text, what="the dialog whole"
    )


def change_rows(screen: str) -> list[str]:
    """The rows of the dialog's framed change, the dialog drawn between `█` over the transcript,
    the change between `│` in it; spaces collapsed."""
    rows: list[str] = []
    for line in screen.splitlines():
        dialog = line.split("█")
        framed = dialog[1].split("│") if len(dialog) >= 3 else []
        if len(framed) == 3:
            rows.append(" ".join(framed[1].split()))
    return rows


def answer(terminal: Terminal, *keys: str, turn: int) -> str:
    """Press `keys` once the guard is over; the screen once turn `turn` has ended."""
    time.sleep(GUARD_SECONDS)
    terminal.press(*keys)
    terminal.wait_gone("Permission needed")
    return terminal.wait_for(f"after {turn}")


def test_each_answer_key_through_a_terminal(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.py").write_text(NOTES, encoding="utf-8")
    edit = call("edit_file", path="notes.py", old="line 15: value 105\n", new="line 15: [b]X[/b]\n")
    script = turns(
        call("write_file", path="new.txt", content="hello\n[a] world\n"),
        call("run_shell", command="echo ran > shell.txt"),
        edit,
        edit,
        call("edit_file", path="notes.py", old="no such text", new="x"),
        call("write_file", path="y.txt", content="y\n"),
        call("write_file", path="z.txt", content="z\n"),  # allowed by the rule turn 6 made
        call("run_shell", command="echo ran > shell.txt"),
    )
    (tmp_path / "script.json").write_text(json.dumps(script), encoding="utf-8")
    args = ["--script", str(tmp_path / "script.json")]
    # wide enough for the whole path of a test's workspace on one line
    with Terminal(args, home=tmp_path / "home", cwd=workspace, columns=180, rows=36) as terminal:
        terminal.wait_for("Sessions")

        # 1. a new file: every line added, shown as written; keys as it opens answer nothing
        screen = ask(terminal, "one", "write_file", in_flight="s\r")
        assert "create new.txt  +2 -0" in screen
        assert "1 + hello" in screen
        assert "2 + [a] world" in screen
        assert "[a] Allow once" in screen
        assert "[s] Allow for this session" in screen
        assert "[r] Reject" in screen
        # the footer is the dialog's once it is composed (a frame later on a busy machine)
        screen = terminal.wait_for("⏎ Choose")
        footer = next(line for line in screen.splitlines() if "⏎ Choose" in line)
        for key in ("⏎ Choose", "a Allow once", "s Allow for session", "r/esc Reject", "←/→ Move"):
            assert key in footer
        assert "Cancel turn" not in footer
        assert "Sessions" not in footer
        time.sleep(GUARD_SECONDS + 0.3)
        assert "Permission needed: write_file" in terminal.text()
        assert not (workspace / "new.txt").exists()
        answer(terminal, "enter", turn=1)  # Enter: the focused answer, Allow once
        assert (workspace / "new.txt").read_text(encoding="utf-8") == "hello\n[a] world\n"

        # 2. a command in full with the folder it runs in; Esc rejects it
        screen = ask(terminal, "two", "run_shell")
        assert f"runs in {workspace}" in screen
        assert "echo ran > shell.txt" in screen
        answer(terminal, "escape", turn=2)
        assert not (workspace / "shell.txt").exists()

        # 3. an edit: the file's diff with its line numbers; r rejects it
        screen = ask(terminal, "three", "edit_file")
        assert "change notes.py  +1 -1" in screen
        rows = change_rows(screen)
        assert "15 - line 15: value 105" in rows
        assert "15 + line 15: [b]X[/b]" in rows
        assert "14 14 line 14: value 98" in rows
        answer(terminal, "r", turn=3)
        assert (workspace / "notes.py").read_text(encoding="utf-8") == NOTES

        # 4. the same edit; a allows it once
        ask(terminal, "four", "edit_file")
        answer(terminal, "a", turn=4)
        assert "line 15: [b]X[/b]\n" in (workspace / "notes.py").read_text(encoding="utf-8")

        # 5. an edit that would fail says so; Shift+Tab goes round to Reject
        screen = ask(terminal, "five", "edit_file")
        assert "The call would fail: old text not found in 'notes.py'" in " ".join(screen.split())
        answer(terminal, "shift+tab", "enter", turn=5)

        # 6. Right moves to "Allow for this session": y.txt is written and so is z.txt unasked
        ask(terminal, "six", "write_file")
        answer(terminal, "right", "enter", turn=6)
        assert (workspace / "y.txt").read_text(encoding="utf-8") == "y\n"
        terminal.write("seven")
        terminal.press("enter")
        terminal.wait_for("after 7")
        assert (workspace / "z.txt").read_text(encoding="utf-8") == "z\n"

        # 8. s allows the command for the session
        ask(terminal, "eight", "run_shell")
        answer(terminal, "s", turn=8)
        assert (workspace / "shell.txt").read_text(encoding="utf-8") == "ran\n"

        terminal.press("ctrl+q")
        terminal.child.expect(pexpect.EOF, timeout=30)
