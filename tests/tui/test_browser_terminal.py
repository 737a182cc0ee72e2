"""The session browser and its export dialog in the real `trellis`, keys sent as a terminal sends
them: F4, the arrows, Enter, Ctrl+R/F/E/D/A, the dialog's ↑/↓, Tab, Enter and Esc."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.store.sqlite.store import SQLiteStore
from tests.terminal import Terminal
from tests.tui.test_replay import stored_session

OTHER_WORKSPACE = "/srv/elsewhere/the-other-project"


async def sessions(data: Path, workspace: Path) -> tuple[str, str]:
    """A stored session and a fork of it (the console opens the fork), and a session in another
    workspace."""
    stored = await stored_session(workspace, data)
    async with SQLiteStore(data / "sessions.sqlite") as store:
        parent = await store.info(stored)
        fork = await store.fork(stored, parent.event_count)
        other = await store.create(cwd=OTHER_WORKSPACE, title="plan the release")
        await store.release(other.id)
    return stored, fork.id


def row(screen: str, session_id: str) -> int | None:
    """The screen line of the session's row (its id column shows 8 characters)."""
    lines = screen.splitlines()
    return next((i for i, line in enumerate(lines) if line.endswith(session_id[:8])), None)


def listed(terminal: Terminal, *session_ids: str) -> str:
    """The screen once the browser has drawn a row for each session."""
    return terminal.wait_until(
        lambda text: "Sessions of" in text and all(row(text, s) is not None for s in session_ids),
        what=f"rows for {', '.join(s[:8] for s in session_ids)}",
    )


def test_the_browser_s_keys(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello world\n", encoding="utf-8")
    data = tmp_path / "home" / "data"
    data.mkdir(parents=True)
    stored, fork = asyncio.run(sessions(data, workspace))
    with Terminal(["--resume", fork], home=tmp_path / "home", cwd=workspace) as terminal:
        terminal.wait_for("Sessions")  # the footer: the console is up
        terminal.press("f4")
        screen = listed(terminal, stored, fork)
        assert f"read notes.txt  ● current  ↳ fork of {stored[:8]}" in screen
        assert "plan the release" not in screen  # another workspace's

        # the arrows move the row; Ctrl+D on the open session says why it cannot, elsewhere asks
        current, other = row(screen, fork), row(screen, stored)
        assert current is not None
        assert other is not None
        terminal.press("down" if other > current else "up")
        terminal.press("ctrl+d")
        terminal.wait_for("Delete session")
        terminal.press("n")
        terminal.wait_gone("Delete session")
        terminal.press("up" if other > current else "down")
        terminal.press("ctrl+d")
        terminal.wait_for("This is the session open")
        assert "Delete session" not in terminal.text()

        # Ctrl+A: every workspace, with a workspace column; again: this one's
        terminal.press("ctrl+a")
        screen = terminal.wait_for("plan the release")
        header = next(line for line in screen.splitlines() if line.split()[:1] == ["title"])
        assert header.split()[:2] == ["title", "workspace"]
        assert "/the-other-project " in screen  # its tail, if not all of it
        terminal.press("ctrl+a")
        terminal.wait_gone("plan the release")

        # Ctrl+E: the export dialog; ↓ chooses the format, Enter writes it in the workspace
        # the filter: the stored session's row alone; a Backspace in the same burst of keys
        # takes the character before it, not one typed after it
        terminal.write(stored[:7] + "z\x7f" + stored[7])
        terminal.wait_until(lambda text: fork[:8] not in text, what="the filtered list")
        terminal.wait_until(
            lambda text: any(f"▊  {stored[:8]} " in line for line in text.splitlines()),
            what=f"the filter reading {stored[:8]}",
        )
        terminal.press("ctrl+e")
        terminal.wait_for("Export session")
        terminal.press("down", "down")
        terminal.wait_for(f"./trellis-{stored[:8]}.html")
        terminal.press("enter")
        terminal.wait_for("exported read notes.txt")  # and the file, in a toast
        terminal.wait_gone("Export session")
        assert (workspace / f"trellis-{stored[:8]}.html").exists()

        # Esc cancels; Tab reaches the file, typed and entered in one burst
        terminal.press("ctrl+e")
        terminal.wait_for("Export session")
        terminal.press("down")
        terminal.wait_for(f"./trellis-{stored[:8]}.json")
        terminal.press("escape")
        terminal.wait_gone("Export session")
        assert not (workspace / f"trellis-{stored[:8]}.json").exists()
        terminal.press("ctrl+e")
        terminal.wait_for("Export session")
        terminal.press("tab")
        terminal.settle()  # keys typed before the focus moved would go to the list
        terminal.press("ctrl+u")
        terminal.write("missing/x.md\r")
        terminal.wait_for("No such file or directory")
        terminal.press("ctrl+u")
        terminal.write("x.mq\x7fd\r")  # typed in one burst: the Backspace in its place
        terminal.wait_gone("Export session")
        assert "read notes.txt" in (workspace / "x.md").read_text(encoding="utf-8")

        # an existing file: the first Enter asks, the second replaces it
        (workspace / "x.md").write_text("keep me\n", encoding="utf-8")
        terminal.press("ctrl+e")
        terminal.wait_for("Export session")
        terminal.press("tab")
        terminal.settle()  # keys typed before the focus moved would go to the list
        terminal.press("ctrl+u")
        terminal.write("x.md\r")
        terminal.wait_for("Enter replaces it")
        assert (workspace / "x.md").read_text(encoding="utf-8") == "keep me\n"
        terminal.press("enter")
        terminal.wait_gone("Export session")
        assert "read notes.txt" in (workspace / "x.md").read_text(encoding="utf-8")

        # Ctrl+R replays the row's session; Esc leaves the replay
        terminal.press("ctrl+r")
        terminal.wait_for("Next turn")
        terminal.press("escape")
        terminal.wait_gone("Next turn")

        # Enter resumes the row's session: it is the current one now
        terminal.press("f4")
        terminal.wait_for("Sessions of")
        terminal.write(stored[:8])
        terminal.wait_until(lambda text: fork[:8] not in text, what="the filtered list")
        terminal.press("enter")
        terminal.wait_gone("Sessions of")
        terminal.press("f4")
        terminal.wait_until(
            lambda text: any(
                "● current" in line and line.endswith(stored[:8]) for line in text.splitlines()
            ),
            what="the resumed session marked current",
        )

        # Ctrl+F forks the row's session and opens the fork; Esc and F4 close the browser
        terminal.write(stored[:8])
        terminal.wait_until(lambda text: fork[:8] not in text, what="the filtered list")
        terminal.press("ctrl+f")
        terminal.wait_gone("Sessions of")
        terminal.press("f4")
        terminal.wait_until(  # two forks now, the new one open
            lambda text: (
                text.count(f"↳ fork of {stored[:8]}") == 2
                and f"● current  ↳ fork of {stored[:8]}" in text
            ),
            what="the new fork, current",
        )
        terminal.press("escape")
        terminal.wait_gone("Sessions of")
        terminal.press("f4")
        terminal.wait_for("Sessions of")
        terminal.press("f4")
        terminal.wait_gone("Sessions of")
