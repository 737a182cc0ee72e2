"""The first minute in a real terminal: the welcome of a new session, gone at the first prompt; the
model picker's keys (Up, Down, Enter, Esc, s, then y) as the terminal sends them, over a local
model server the test runs and names in `TRELLIS_LOCAL_SERVERS`."""

from __future__ import annotations

from pathlib import Path

from engine.local_servers import SERVERS_ENV
from tests.local_model_server import ModelListServer
from tests.terminal import KEYS, Terminal

PICKER_HEADER = "name · model"


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


def test_the_picker_s_keys_and_a_local_server_s_models(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ModelListServer(["qwen3:8b", "llama3.2"]) as ollama:
        environment = {SERVERS_ENV: f"ollama={ollama.port}"}
        with Terminal(
            [], home=home, cwd=workspace_of(tmp_path), env=environment, columns=110
        ) as terminal:
            terminal.wait_for("ollama/qwen3:8b")  # asked after the first paint: in the welcome
            terminal.wait_for("Ask the agent")
            terminal.write("/model")
            terminal.press("enter")
            screen = terminal.wait_for(PICKER_HEADER)
            assert f"ollama at 127.0.0.1:{ollama.port}" in screen
            terminal.wait_for(f"ollama at 127.0.0.1:{ollama.port}: 2 models")
            terminal.press("f1")  # the picker's keys
            screen = terminal.wait_for("Keys and commands")
            assert "Use and save as default" in screen
            terminal.press("escape")
            terminal.wait_gone("Keys and commands")
            terminal.press("escape")  # closes, nothing changes
            terminal.wait_gone(PICKER_HEADER)
            terminal.write("/model")
            terminal.press("enter")
            terminal.wait_for(PICKER_HEADER)
            # typed ahead, in one write: Enter comes after the arrows, not before them
            terminal.write("".join(KEYS[key] for key in ("down", "down", "up", "enter")))
            terminal.wait_gone(PICKER_HEADER)
            terminal.wait_for("│ ollama/qwen3:8b │")  # the status line names it
            terminal.write("/model")
            terminal.press("enter")
            terminal.wait_for(PICKER_HEADER)
            terminal.press("down", "down", "down", "s")  # llama3.2, saved as the default
            terminal.wait_for("as your default model?")
            terminal.press("y")
            terminal.wait_gone(PICKER_HEADER)
            terminal.wait_for("│ ollama/llama3.2 │")
    assert (home / "config.toml").read_text(encoding="utf-8") == (
        'default_model = "ollama/llama3.2"\n'
    )
