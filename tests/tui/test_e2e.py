"""The real `trellis` in a pseudo-terminal: type a prompt, read the reply off the screen, Ctrl+Q."""

from __future__ import annotations

from pathlib import Path

import pexpect

from tests.agent.harness import trellis_argv, trellis_env


def test_the_console_answers_a_prompt_and_quits(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    argv = trellis_argv([])
    env = trellis_env(home=tmp_path / "home", config=config)
    env.pop("NO_COLOR", None)
    env["TERM"] = "xterm-256color"
    child = pexpect.spawn(
        argv[0], argv[1:], cwd=str(workspace), env=env, dimensions=(30, 100), encoding="utf-8"
    )
    try:
        child.expect("Sessions", timeout=30)  # the footer: the console is up
        child.send("hello there")
        child.send("\r")
        # the offline model answers deterministically, saying what it was given
        child.expect("You said", timeout=30)
        child.sendcontrol("q")
        child.expect(pexpect.EOF, timeout=30)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
