"""The trust dialog of a project whose `.trellis/config.toml` holds a setting that needs trust:
each answer's key, as a terminal sends it. The dialog shows once, when the console starts, so
each step runs in a process of its own."""

from __future__ import annotations

import pytest

from app.tui.screens.trust import TrustDialog
from tests.terminal import Terminal
from tests.tui.keys.checks import KeyChecks, Step, run_step
from tests.tui.keys.conftest import Place

CHECKS = KeyChecks()
QUESTION = "This project's configuration needs your trust"
PROJECT_CONFIG = "[serve]\nport = 9999\n"
"""A key an untrusted project may not set (it changes who can reach `trellis serve`), harmless
to the console once trusted."""


@CHECKS.step(TrustDialog, "t")
def trust(terminal: Terminal) -> None:
    """`t` trusts the file: the console opens with it, and says so."""
    terminal.press("t")
    terminal.wait_gone(QUESTION)
    terminal.wait_for("▌ trusted")
    terminal.wait_for("Ask the agent")


@CHECKS.step(TrustDialog, "c")
def continue_without(terminal: Terminal) -> None:
    """`c` goes on without the skipped settings."""
    terminal.press("c")
    terminal.wait_gone(QUESTION)
    assert "▌ trusted" not in terminal.wait_for("Ask the agent")


@CHECKS.step(TrustDialog, "escape")
def escape_continues_without(terminal: Terminal) -> None:
    """Esc answers as `c` does."""
    terminal.press("escape")
    terminal.wait_gone(QUESTION)
    assert "▌ trusted" not in terminal.wait_for("Ask the agent")


@pytest.mark.parametrize("step", list(CHECKS.steps.values()), ids=lambda step: step.name)
def test_each_key_of_the_trust_dialog(place: Place, step: Step) -> None:
    (place.workspace / ".trellis").mkdir()
    (place.workspace / ".trellis" / "config.toml").write_text(PROJECT_CONFIG, encoding="utf-8")
    with Terminal([], home=place.home, cwd=place.workspace) as terminal:
        terminal.wait_for(QUESTION)
        terminal.wait_for("serve")  # the skipped key, named
        run_step(step, terminal)
