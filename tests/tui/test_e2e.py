"""The real `trellis` in a pseudo-terminal: type a prompt, read the reply off the screen, Ctrl+Q."""

from __future__ import annotations

from pathlib import Path

import pexpect

from tests.terminal import Terminal


def test_the_console_answers_a_prompt_and_quits(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with Terminal([], home=tmp_path / "home", cwd=workspace) as terminal:
        terminal.wait_for("Sessions")  # the footer: the console is up
        terminal.write("hello there")
        terminal.press("enter")
        # the offline model answers deterministically, saying what it was given
        screen = terminal.wait_for("You said")
        assert "hello there" in screen
        terminal.press("ctrl+q")
        terminal.child.expect(pexpect.EOF, timeout=30)
        assert terminal.close() == 0
