"""`trellis replay` shows an edit's recorded change as a diff in the tool card, from the log alone,
driven through a real terminal."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agent.harness import trellis
from tests.terminal import Terminal


def test_the_replayed_tool_card_shows_the_edits_diff(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("remember the milk\nand the eggs\n")
    config = home / "config.toml"
    config.parent.mkdir()
    config.write_text("")
    script = tmp_path / "script.json"
    edit = {"path": "notes.txt", "old": "the eggs", "new": "the bread"}
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {"tool_calls": [{"name": "edit_file", "arguments": edit}]},
                    {"text": "done"},
                ]
            }
        )
    )
    ran = trellis(
        ["run", "-p", "edit the notes", "--script", str(script), "--approve-all", "--json"],
        home=home / "data",
        config=config,
        cwd=workspace,
    )
    assert ran.code == 0, ran.stderr
    session = json.loads(ran.stdout.splitlines()[0])["id"]
    (workspace / "notes.txt").write_text(
        "changed since\n"
    )  # the replay reads the log, not the disk
    with Terminal(["replay", session], home=home, cwd=workspace, config=config) as terminal:
        terminal.wait_for("turn 0/1")
        terminal.press("end")
        screen = terminal.wait_for("changed notes.txt at line 2")
        assert "-and the eggs" in screen
        assert "+and the bread" in screen
        assert " remember the milk" in screen
