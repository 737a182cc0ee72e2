"""`trellis replay ID`: every key of the replay screen, as a terminal sends it, on a stored session
whose transcript is taller than the screen (Home/End of the focused transcript then scroll it)."""

from __future__ import annotations

import asyncio
import re

import pexpect

from app.tui.screens.inspector import ContextInspector
from app.tui.screens.replay import NO_SEQ, ReplayScreen
from engine.gateway.scripted import Reply
from tests.terminal import Terminal
from tests.tui.keys.checks import KeyChecks
from tests.tui.keys.conftest import READ_NOTES, Place, numbered, store_session

CHECKS = KeyChecks()
TURNS = [READ_NOTES, ("tell me a lot", [Reply(text=numbered(30))])]


def bar(terminal: Terminal) -> str:
    """The position bar's line."""
    return next(line for line in terminal.text().splitlines() if " seq " in line)


def wait_bar(terminal: Terminal, pattern: str) -> str:
    """The screen once the position bar matches `pattern`."""
    return terminal.wait_until(
        lambda text: any(" seq " in line and re.search(pattern, line) for line in text.split("\n")),
        what=f"the position bar matching {pattern!r}",
    )


@CHECKS.step(ReplayScreen, "right", "left")
def step_forward_and_back(terminal: Terminal) -> None:
    """→ plays one event, ← takes one back."""
    wait_bar(terminal, rf"seq {NO_SEQ}/\d+")
    terminal.press("right", "right", "right")
    wait_bar(terminal, r"seq 2/")
    terminal.press("left")
    wait_bar(terminal, r"seq 1/")


@CHECKS.step(ReplayScreen, "t", "T")
def next_and_previous_turn(terminal: Terminal) -> None:
    """t goes to the next turn's start, T (Shift+t) to the previous one's."""
    terminal.press("t")
    wait_bar(terminal, r"turn 1/2")
    terminal.press("t")
    wait_bar(terminal, r"turn 2/2")
    terminal.wait_for("── turn 2 ·")
    terminal.press("T")
    wait_bar(terminal, r"turn 1/2")
    terminal.wait_gone("── turn 2 ·")


@CHECKS.step(ReplayScreen, "end", "home")
def to_the_end_and_the_start(terminal: Terminal) -> None:
    """End plays to the last event and Home goes back before the first, though the transcript,
    taller than the screen by then, scrolls with Home/End of its own."""
    terminal.press("end")
    wait_bar(terminal, r"seq (\d+)/\1 ")
    terminal.wait_for("line 30")
    terminal.press("home")
    wait_bar(terminal, rf"seq {NO_SEQ}/")
    terminal.wait_gone("line 30")
    terminal.wait_gone("█ read notes.txt")  # nothing played: no prompt in the transcript


@CHECKS.step(ReplayScreen, "right_square_bracket", "left_square_bracket")
def faster_and_slower(terminal: Terminal) -> None:
    """`]` doubles the speed, `[` halves it."""
    wait_bar(terminal, r"‖ 1x ")
    terminal.press("right_square_bracket", "right_square_bracket")
    wait_bar(terminal, r"‖ 4x ")
    terminal.press("left_square_bracket", "left_square_bracket", "left_square_bracket")
    wait_bar(terminal, r"‖ 0.5x ")


@CHECKS.step(ReplayScreen, "space")
def play_and_pause(terminal: Terminal) -> None:
    """Space plays at the original pace (a quarter second a step, halved), Space again pauses."""
    terminal.press("space")
    wait_bar(terminal, r"▶ 0.5x  seq [0-9]")
    terminal.press("space")
    paused = wait_bar(terminal, r"‖ 0.5x ")
    position = re.search(r"seq (\d+)/(\d+)", paused)
    assert position is not None
    assert int(position[1]) < int(position[2]), "paused before the end"


@CHECKS.step(ReplayScreen, "f2")
def side_panel(terminal: Terminal) -> None:
    """F2 hides the side panel and shows it again."""
    terminal.wait_for("Areas  GC")
    terminal.press("f2")
    terminal.wait_gone("Areas  GC")
    terminal.press("f2")
    terminal.wait_for("Areas  GC")


@CHECKS.step(ReplayScreen, "f3")
@CHECKS.step(ContextInspector, "escape")
def inspect_the_request(terminal: Terminal) -> None:
    """F3 shows the request as of the position (the last one at the end); Esc goes back."""
    terminal.press("end")
    terminal.wait_for("line 30")
    terminal.press("f3")
    terminal.wait_for("Request (last step)")
    terminal.press("escape")
    terminal.wait_gone("Request (last step)")
    wait_bar(terminal, r"seq (\d+)/\1 ")


@CHECKS.step(ReplayScreen, "f8")
def budget_parts(terminal: Terminal) -> None:
    """F8 shows what filled the window at the position and puts the keyboard on the largest
    parts (Enter inspects one); F8 again gives the keyboard back to the player."""
    terminal.press("f8")
    terminal.wait_for("by category, % of the")
    terminal.wait_for("Inspect part")
    terminal.press("enter")
    terminal.wait_for("Request (last step)")
    terminal.press("escape")
    terminal.wait_gone("Request (last step)")
    terminal.press("f8")
    terminal.wait_gone("Inspect part")


@CHECKS.step(ReplayScreen, "escape")
def close(terminal: Terminal) -> None:
    """Esc closes a replay opened from the command line: trellis ends."""
    terminal.press("escape")
    terminal.child.expect(pexpect.EOF, timeout=30)
    assert terminal.close() == 0


def test_every_key_of_the_replay_screen(place: Place) -> None:
    session_id = asyncio.run(store_session(place, TURNS))
    with Terminal(["replay", session_id], home=place.home, cwd=place.workspace) as terminal:
        CHECKS.run(terminal)
