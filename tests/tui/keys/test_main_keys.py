"""`trellis` on a new session: every key of the main screen, the prompt, a transcript entry and
the app, and of the screens they open on top of it (F1's help, F3's inspector), as a terminal
sends them; scripted replies on the offline model (`--script`)."""

from __future__ import annotations

import re

import pexpect

from app.tui.app import TrellisApp
from app.tui.screens.help import HelpScreen
from app.tui.screens.inspector import ContextInspector
from app.tui.screens.main import PROMPT_PLACEHOLDER, MainScreen
from app.tui.screens.sessions import SessionBrowser
from app.tui.widgets.entries import EntryWidget, LongEntry
from app.tui.widgets.prompt_input import PromptInput
from app.tui.widgets.window_breakdown import LargestParts
from tests.terminal import Terminal
from tests.tui.keys.checks import KeyChecks
from tests.tui.keys.conftest import LONG_FILE_LINES, Place, numbered

CHECKS = KeyChecks()
REPLIES: tuple[dict[str, object], ...] = (
    {"text": numbered(40)},
    {"text": "Three lines."},
    {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "long.txt"}}]},
    {"text": "Read it."},
    {"text": numbered(200, "slowly"), "chunk_delay": 0.1},
    {
        "text": "Writing.",
        "tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "x"}}],
    },
    {"text": "It was refused."},
)
"""The model's replies, in the order the steps below send their prompts."""
HINT_KEYS = "tab/↑↓ choose"
"""The completion hint's last line: shown while there are suggestions to choose from."""


def prompt_lines(terminal: Terminal) -> list[str]:
    """The text in the prompt's box (the last box drawn at the left edge), a string per line, up
    to its right border or a notification drawn over it (`▌` is a notification's left edge)."""
    lines = terminal.text().splitlines()
    tops = [i for i, line in enumerate(lines) if line.startswith("╭")]
    box: list[str] = []
    for line in lines[tops[-1] + 1 :] if tops else []:
        if line.startswith("╰"):
            break
        box.append(re.split("[│▌]", line[1:])[0].strip())
    return box


def wait_prompt(terminal: Terminal, *lines: str) -> None:
    """Until the prompt holds `lines` (none: it is empty, its placeholder shown)."""
    expected = list(lines) or [PROMPT_PLACEHOLDER]
    terminal.wait_until(
        lambda _: prompt_lines(terminal) == expected, what=f"the prompt holding {expected}"
    )


def clear_prompt(terminal: Terminal, length: int) -> None:
    terminal.press(*["backspace"] * length)
    wait_prompt(terminal)


@CHECKS.step(PromptInput, "enter")
def send(terminal: Terminal) -> None:
    """Enter sends the prompt; the reply shows below it."""
    wait_prompt(terminal)
    terminal.write("hello")
    wait_prompt(terminal, "hello")
    terminal.press("enter")
    terminal.wait_for("█ hello")
    terminal.wait_for("line 40")
    terminal.wait_for("● idle")


@CHECKS.step(PromptInput)
def edits_in_one_read(terminal: Terminal) -> None:
    """Keys that reach trellis in one read (typed fast, or while it is busy) apply in order:
    Backspace deletes the `b`, not the `c` typed after it."""
    terminal.write("ab\x7fc")
    wait_prompt(terminal, "ac")
    clear_prompt(terminal, 2)


@CHECKS.step(PromptInput, "pageup", "pagedown")
def page_the_conversation(terminal: Terminal) -> None:
    """PageUp/PageDown in the prompt scroll the conversation, and typing still goes to it."""
    terminal.press("pageup")
    terminal.wait_gone("line 40")
    terminal.write("x")
    wait_prompt(terminal, "x")
    terminal.press("pagedown", "pagedown")
    terminal.wait_for("line 40")
    clear_prompt(terminal, 1)


@CHECKS.step(PromptInput, "shift+enter", "ctrl+j")
def new_lines(terminal: Terminal) -> None:
    """Shift+Enter (CSI-u, where the terminal reports it) and Ctrl+J (a line feed, in every
    terminal) break the line; Enter (a carriage return) still sends."""
    terminal.write("a")
    terminal.press("shift+enter")
    terminal.write("b")
    terminal.press("ctrl+j")
    terminal.write("c")
    wait_prompt(terminal, "a", "b", "c")
    terminal.press("enter")
    terminal.wait_for("Three lines.")
    wait_prompt(terminal)


@CHECKS.step(PromptInput, "up", "down")
def history(terminal: Terminal) -> None:
    """Up in an empty prompt brings back what was sent last, Down goes back to the draft."""
    terminal.press("up")
    wait_prompt(terminal, "a", "b", "c")
    terminal.press("down")
    wait_prompt(terminal)


@CHECKS.step(PromptInput, "tab", "shift+tab", "down", "up", "escape")
def complete_a_command(terminal: Terminal) -> None:
    """With suggestions shown Up/Down move the highlight, Tab takes the highlighted one and each
    further Tab the next, Shift+Tab the one before, Esc hides them; with none, Tab does nothing
    and the keys after it still reach the prompt."""
    terminal.write("/p")
    terminal.wait_for("▸ /pin TEXT")
    terminal.press("down")
    terminal.wait_for("▸ /plan [")
    terminal.press("up")
    terminal.wait_for("▸ /pin TEXT")
    terminal.press("tab")
    wait_prompt(terminal, "/pin")
    terminal.press("tab")
    wait_prompt(terminal, "/plan")
    terminal.wait_for("▸ /plan [")
    terminal.press("shift+tab")
    wait_prompt(terminal, "/pin")
    terminal.press("escape")
    terminal.wait_gone(HINT_KEYS)
    terminal.press("tab", "tab")
    terminal.write("x")
    wait_prompt(terminal, "/pin x")
    assert "▸" not in terminal.text()
    clear_prompt(terminal, len("/pin x"))


@CHECKS.step(PromptInput, "shift+tab", "tab")
@CHECKS.step(EntryWidget, "c")
def copy_an_entry(terminal: Terminal) -> None:
    """Shift+Tab with no suggestions focuses the last entry; `c` copies its text; Tab from the
    last entry is back in the prompt."""
    terminal.press("shift+tab")
    terminal.press("c")
    terminal.wait_for("copied")
    wait_prompt(terminal)  # the `c` went to the entry, not the prompt
    terminal.press("tab")
    terminal.write("y")
    wait_prompt(terminal, "y")
    clear_prompt(terminal, 1)


@CHECKS.step(LongEntry, "enter")
def expand_a_tool_card(terminal: Terminal) -> None:
    """Enter on a focused tool card with long output expands it and collapses it again."""
    terminal.write("read long.txt")
    terminal.press("enter")
    terminal.wait_for("Read it.")
    hidden = f"{LONG_FILE_LINES - 12} more lines (Enter expands)"
    terminal.wait_for(hidden)
    terminal.press("shift+tab", "shift+tab")  # the last reply, then the card above it
    terminal.press("enter")
    terminal.wait_gone(hidden)
    terminal.wait_for("long line 15")
    terminal.press("enter")
    terminal.wait_for(hidden)
    terminal.press("tab", "tab")
    terminal.settle()  # Tab moves the focus once it has bubbled up: a key typed sooner goes before
    terminal.write("z")
    wait_prompt(terminal, "z")
    clear_prompt(terminal, 1)


@CHECKS.step(MainScreen, "escape")
def cancel_the_turn(terminal: Terminal) -> None:
    """Esc while a turn runs cancels it."""
    terminal.write("go slowly")
    terminal.press("enter")
    terminal.wait_for("slowly 1")
    terminal.press("escape")
    terminal.wait_for("cancelled")
    terminal.wait_for("● idle")


@CHECKS.step(MainScreen, "f2")
def side_panel(terminal: Terminal) -> None:
    """F2 hides the side panel and shows it again."""
    terminal.wait_for("Areas  GC")
    terminal.press("f2")
    terminal.wait_gone("Areas  GC")
    terminal.press("f2")
    terminal.wait_for("Areas  GC")


@CHECKS.step(MainScreen, "f3")
@CHECKS.step(ContextInspector, "c", "f3", "escape")
def inspect_the_request(terminal: Terminal) -> None:
    """F3 opens the inspector on the last request; `c` copies the highlighted item; F3 or Esc
    go back."""
    terminal.press("f3")
    terminal.wait_for("prefix digest")
    terminal.press("c")
    terminal.wait_for("Copied")
    terminal.press("f3")
    terminal.wait_gone("prefix digest")
    terminal.press("f3")
    terminal.wait_for("prefix digest")
    terminal.press("escape")
    terminal.wait_gone("prefix digest")
    wait_prompt(terminal)


@CHECKS.step(MainScreen, "f8")
@CHECKS.step(LargestParts, "enter")
def budget_parts(terminal: Terminal) -> None:
    """F8 shows what fills the window and puts the keyboard on the largest parts; Enter opens
    the highlighted one in the inspector; F8 again gives the keyboard back to the prompt."""
    terminal.press("f8")
    terminal.wait_for("by category, % of the")
    terminal.wait_for("Inspect part")  # the footer: Enter is the parts' key now
    terminal.press("enter")
    terminal.wait_for("prefix digest")
    terminal.press("escape")
    terminal.wait_gone("prefix digest")
    terminal.press("f8")
    terminal.wait_gone("Inspect part")
    terminal.write("x")
    wait_prompt(terminal, "x")
    clear_prompt(terminal, 1)


@CHECKS.step(TrellisApp, "f1")
@CHECKS.step(HelpScreen, "escape", "f1", "q")
def help_screen(terminal: Terminal) -> None:
    """F1 opens the keys and commands; Esc, F1 or q close them."""
    for close in ("escape", "f1", "q"):
        terminal.press("f1")
        terminal.wait_for("Keys and commands")
        terminal.press(close)
        terminal.wait_gone("Keys and commands")
    wait_prompt(terminal)


@CHECKS.step(TrellisApp, "ctrl+p")
def command_palette(terminal: Terminal) -> None:
    """Ctrl+P opens the command palette (Esc closes it)."""
    terminal.press("ctrl+p")
    terminal.wait_for("Search for commands")
    terminal.press("escape")
    terminal.wait_gone("Search for commands")
    wait_prompt(terminal)


@CHECKS.step(TrellisApp, "f4")
@CHECKS.step(SessionBrowser, "f4")
def session_browser(terminal: Terminal) -> None:
    """F4 opens this directory's sessions, and F4 there closes them."""
    terminal.press("f4")
    screen = terminal.wait_for("Sessions of")
    assert re.search(r"Sessions of .*: 1", screen), "this session is listed"
    terminal.press("f4")
    terminal.wait_gone("Sessions of")
    wait_prompt(terminal)


@CHECKS.step(MainScreen, "f5")
def change_the_mode(terminal: Terminal) -> None:
    """F5 steps the permission mode (accept edits, read-only, back to ask); the status line and
    the transcript say which, and in read-only a write tool is refused without a dialog, the
    model reading why."""
    terminal.press("f5")
    terminal.wait_for("mode accept edits")
    terminal.press("f5")
    terminal.wait_for("mode read-only")
    terminal.write("write new.txt")
    terminal.press("enter")
    terminal.wait_for("It was refused.")
    screen = terminal.wait_for("write_file was refused")
    assert "Allow once" not in screen
    assert not (terminal.cwd / "new.txt").exists()
    terminal.press("f5")
    terminal.wait_for("Mode: ask")
    wait_prompt(terminal)


@CHECKS.step(MainScreen, "ctrl+q")
def quit_the_console(terminal: Terminal) -> None:
    """Ctrl+Q quits."""
    terminal.press("ctrl+q")
    terminal.child.expect(pexpect.EOF, timeout=30)
    assert terminal.close() == 0


def test_every_key_of_the_main_screen(place: Place) -> None:
    script = place.script(*REPLIES)
    # wide enough that a notification leaves the prompt's placeholder whole
    with Terminal(
        ["--script", str(script)], home=place.home, cwd=place.workspace, columns=140
    ) as terminal:
        CHECKS.run(terminal)
