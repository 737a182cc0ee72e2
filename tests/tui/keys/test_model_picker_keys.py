"""The model picker (`/model`) and its save confirmation: each key as a terminal sends it, over a
local model server the test runs and names in `TRELLIS_LOCAL_SERVERS`."""

from __future__ import annotations

from pathlib import Path

from app.tui.screens.model_picker import ConfirmDefault, ModelPicker, ModelTable
from engine.local_servers import SERVERS_ENV
from tests.local_model_server import ModelListServer
from tests.terminal import KEYS, Terminal
from tests.tui.keys.checks import KeyChecks
from tests.tui.keys.conftest import Place

CHECKS = KeyChecks()
PICKER_HEADER = "name · model"
SAVE_QUESTION = "as your default model?"


def open_picker(terminal: Terminal) -> str:
    terminal.write("/model")
    terminal.press("enter")
    return terminal.wait_for(PICKER_HEADER)


@CHECKS.step(ModelPicker, "escape")
def escape_closes(terminal: Terminal) -> None:
    """Esc closes the picker; the session keeps its model."""
    open_picker(terminal)
    terminal.press("escape")
    terminal.wait_gone(PICKER_HEADER)
    terminal.wait_for("│ scripted │")  # the status line, drawn again once the picker is gone


@CHECKS.step(ModelTable, "enter")
def enter_uses_the_highlighted_model(terminal: Terminal) -> None:
    """Enter uses the highlighted model from the next turn; arrows typed ahead of it, in one
    write, move the highlight first."""
    open_picker(terminal)
    terminal.write("".join(KEYS[key] for key in ("down", "down", "up", "enter")))
    terminal.wait_gone(PICKER_HEADER)
    terminal.wait_for("│ ollama/qwen3:8b │")  # the status line names it


@CHECKS.step(ConfirmDefault, "n", "escape")
def no_and_escape_save_nothing(terminal: Terminal) -> None:
    """`s` asks before it saves: `n` and Esc answer no, and the picker stays."""
    for key in ("n", "escape"):
        open_picker(terminal)
        terminal.press("down", "down", "down", "s")
        terminal.wait_for(SAVE_QUESTION)
        terminal.press(key)
        terminal.wait_gone(SAVE_QUESTION)
        terminal.press("escape")
        terminal.wait_gone(PICKER_HEADER)


@CHECKS.step(ModelPicker, "s")
@CHECKS.step(ConfirmDefault, "y")
def s_then_y_uses_and_saves(terminal: Terminal) -> None:
    """`s`, then `y`, uses the highlighted model and saves it as the default."""
    open_picker(terminal)
    terminal.press("down", "down", "down", "s")  # llama3.2
    terminal.wait_for(SAVE_QUESTION)
    terminal.press("y")
    terminal.wait_gone(PICKER_HEADER)
    terminal.wait_for("│ ollama/llama3.2 │")


def test_every_key_of_the_model_picker(place: Place) -> None:
    config = place.home / "config.toml"
    with ModelListServer(["qwen3:8b", "llama3.2"]) as ollama:
        environment = {SERVERS_ENV: f"ollama={ollama.port}"}
        with Terminal(
            [], home=place.home, cwd=place.workspace, env=environment, columns=110
        ) as terminal:
            terminal.wait_for("ollama/qwen3:8b")  # asked after the first paint: in the welcome
            terminal.wait_for("Ask the agent")
            CHECKS.run(terminal)
    assert Path(config).read_text(encoding="utf-8") == 'default_model = "ollama/llama3.2"\n'
