"""How rewind and the workspace's changes look: SVG snapshots compared with the baselines in
`snapshots/test_rewind_snapshots/` — the list of prompts, the choice with a file changed by
someone else, a shell card with the files its command changed, and a turn rule's files line
opened on its diffs. Two turns on the scripted model: one writes a.txt, one runs a command that
appends to it and creates b.txt. The times are the fixed clock's, in UTC."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from app.tui.screens.rewind import RewindDialog, RewindList
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_rewind import rules, shell_turns, two_turns
from tests.waiting import until

SnapCompare = Callable[..., bool]
SIZE = (110, 34)


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The list shows local times: UTC here, so the pictures are the same on every machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def app(workspace: Path, data: Path) -> ConsoleTestApp:
    return ConsoleTestApp(workspace, data, shell_turns())


async def ran(pilot: Pilot[None]) -> ConsoleTestApp:
    app = pilot.app
    assert isinstance(app, ConsoleTestApp)
    await two_turns(app, pilot)
    await pilot.pause()
    return app


async def rewind_list(pilot: Pilot[None]) -> ConsoleTestApp:
    app = await ran(pilot)
    await pilot.press("escape", "escape")
    await until(lambda: isinstance(app.screen, RewindList), "the list", pilot=pilot)
    await pilot.pause()
    return app


def test_the_rewind_list(snap_compare: SnapCompare, app: ConsoleTestApp) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=rewind_list)


def test_the_rewind_choice_with_a_conflict(
    snap_compare: SnapCompare, app: ConsoleTestApp, workspace: Path
) -> None:
    async def run(pilot: Pilot[None]) -> None:
        await ran(pilot)
        (workspace / "b.txt").write_text("mine\n", encoding="utf-8")  # someone else's edit
        await pilot.press("escape", "escape")
        await until(lambda: isinstance(app.screen, RewindList), "the list", pilot=pilot)
        await pilot.pause()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, RewindDialog), "the choice", pilot=pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run)


def test_a_shell_card_with_the_files_it_changed(
    snap_compare: SnapCompare, app: ConsoleTestApp
) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=ran)


def test_a_turn_rule_opened_on_its_diffs(snap_compare: SnapCompare, app: ConsoleTestApp) -> None:
    async def run(pilot: Pilot[None]) -> None:
        await ran(pilot)
        rule = rules(app)[-1]
        rule.focus()
        await pilot.press("enter")
        await pilot.pause()
        rule.scroll_visible(top=True, animate=False)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run)
