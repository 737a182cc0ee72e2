"""Text from the engine, a tool, a file or the model is shown as written everywhere in the console:
nothing in it is read as markup (`/plan check 1` showed `-  1. a` for `- [x] 1. a`). Read off the
screen of the real `trellis` in a terminal."""

from __future__ import annotations

import json
from pathlib import Path

from tests.terminal import Terminal

MARKUP = "[x] [bold]b[/] [red]r[/red] [link=https://e.x]l[/link]"
"""What Rich or Textual markup would eat: a check box, a style, a colour, a link."""


def test_data_that_looks_like_markup_is_shown_as_written(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "[x] notes.txt").write_text(f"file says {MARKUP}\n", encoding="utf-8")
    script = tmp_path / "script.json"
    call = {"name": "read_file", "arguments": {"path": "[x] notes.txt"}}
    script.write_text(
        json.dumps({"replies": [{"text": "Reading.", "tool_calls": [call]}, {"text": "Read."}]})
    )
    with Terminal(
        ["--script", str(script)], home=tmp_path / "home", cwd=workspace, rows=50, columns=160
    ) as terminal:
        terminal.wait_for("Sessions")
        terminal.write(f"look {MARKUP}")
        terminal.press("enter")
        screen = terminal.wait_for("Read.")
        assert f"look {MARKUP}" in screen, "the user's words"
        assert 'read_file(path="[x] notes.txt")' in screen, "a tool card's title"
        assert f"file says {MARKUP}" in screen, "a tool's output"
        terminal.write("/plan add [x] 1. a")
        terminal.press("enter")
        terminal.wait_for("- [ ] 1. [x] 1. a")  # the notice: the plan, its item as written
        terminal.write("/plan check 1")
        terminal.press("enter")
        terminal.wait_for("- [x] 1. [x] 1. a")
        terminal.write("/subtask fix [x] now")
        terminal.press("enter")
        terminal.wait_for("subtask#")
        terminal.wait_for("fix [x] now")  # the Areas table: the subtask's name
        terminal.write(f"/inject {MARKUP}")
        terminal.press("enter")
        terminal.wait_until(  # an injected context card: its title, then its text
            lambda text: MARKUP in text.partition("Injected context · command: inject")[2],
            what="the injected context card",
        )
        terminal.press("f3")  # the inspector: each item of the request, and the one highlighted
        terminal.wait_for("Request of turn")
        for _ in range(20):  # down the rows to the user's message, as the model got it
            if "item 0 · user" in terminal.text():
                break
            terminal.press("down")
            terminal.settle(0.1)
        terminal.wait_for("item 0 · user")
        terminal.wait_for(MARKUP)
        terminal.press("escape")
        terminal.wait_gone("Request of turn")
        terminal.press("f4")  # the session browser: the title is the first prompt line
        screen = terminal.wait_for("Resume")
        assert f"look {MARKUP}"[:30] in screen
        terminal.press("escape")
        terminal.wait_gone("Resume")
