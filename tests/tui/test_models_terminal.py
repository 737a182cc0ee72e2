"""The first minute in a real terminal: the welcome of a new session, gone at the first prompt (the
model picker's keys: tests/tui/keys/test_model_picker_keys.py)."""

from __future__ import annotations

from pathlib import Path

from tests.terminal import Terminal


def workspace_of(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return workspace


def test_the_welcome_shows_on_a_new_session_and_goes_at_the_first_prompt(tmp_path: Path) -> None:
    with Terminal([], home=tmp_path / "home", cwd=workspace_of(tmp_path)) as terminal:
        terminal.wait_for("Ask the agent")  # the session is open, drawn whole
        screen = terminal.wait_for("attach a file")  # the welcome's last line
        assert "Welcome to Trellis" in screen
        assert "the offline demo model" in screen
        assert "OPENAI_API_KEY" in screen
        terminal.write("hello there")
        terminal.press("enter")
        screen = terminal.wait_for("You said")
        assert "Welcome to Trellis" not in screen
        assert "offline demo model" not in screen
