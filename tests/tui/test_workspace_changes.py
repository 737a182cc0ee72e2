"""What turns and commands changed in the workspace, live and replayed (Pilot): a shell card
lists the files its command changed and the turn rule how many the turn changed, each with the
diffs one Enter away; the replay, stepped onto such a change, opens that entry on its diffs."""

from __future__ import annotations

from pathlib import Path

from app.tui.screens.replay import ReplayScreen
from app.tui.widgets.entries import ToolCard, TurnRule
from app.tui.widgets.prompt_input import PromptInput
from replay.entries import RewindEntry, ToolEntry, TurnEntry
from replay.transcript import transcript_of
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_replay import replay_app
from tests.tui.test_rewind import rules, shell_card, shell_turns, shown, turn_of, two_turns
from tests.waiting import until


async def test_the_shell_card_and_the_turn_rule_show_the_files_changed(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, shell_turns())
    async with app.run_test(size=(120, 40)) as pilot:
        await two_turns(app, pilot)
        card = shell_card(app)
        text = shown(card)
        assert "2 files +2 -0  (Enter shows the diffs)" in text
        assert "changed a.txt (+1 -0)" in text
        assert "created b.txt (+1 -0)" in text
        assert "+two" not in text
        card.focus()
        await pilot.press("enter")  # the diffs, one key away
        await pilot.pause()
        text = shown(card)
        assert "+two" in text
        assert "+++ b/b.txt" in text
        await pilot.press("enter")
        await pilot.pause()
        assert "+two" not in shown(card)

        first, second = rules(app)
        assert "1 file +1 -0" in shown(first)
        assert "2 files +2 -0" in shown(second)
        assert "turn 2" in shown(second).splitlines()[0]
        second.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert "+new" in shown(second)


async def test_the_replay_opens_the_changes_at_its_position(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, shell_turns())
    async with app.run_test(size=(120, 40)) as pilot:
        await two_turns(app, pilot)
        session_id = app.live.session_id
    replay = replay_app(workspace, data, session_id)
    async with replay.run_test(size=(120, 40)) as pilot:
        await until(lambda: isinstance(replay.screen, ReplayScreen), "the replay", pilot=pilot)
        screen = replay.screen
        assert isinstance(screen, ReplayScreen)
        await pilot.pause()
        events = [e.type for e in screen.log_events]
        tool_changes = events.index("tool/changes")
        turn_changes = len(events) - 1 - events[::-1].index("turn/changes")
        for _ in range(tool_changes + 1):  # step by step onto the command's changes
            await pilot.press("right")
        await pilot.pause()
        card = replay.screen.focused
        assert isinstance(card, ToolCard)
        assert card.expanded
        assert "+new" in shown(card)  # b.txt's diff
        for _ in range(turn_changes - tool_changes):  # onto turn 2's changes
            await pilot.press("right")
        await pilot.pause()
        rule = replay.screen.focused
        assert isinstance(rule, TurnRule)
        assert turn_of(rule).number == 2
        assert rule.expanded
        assert "+two" in shown(rule)


async def test_the_live_transcript_is_the_stored_logs(workspace: Path, data: Path) -> None:
    """The console's entries, fed live, are those the stored log projects (the replay's): the
    files on the turn rules and the shell card, and the rewind with what it restored. A rewind
    made without the dialog puts the prompt back in the input too."""
    app = ConsoleTestApp(workspace, data, shell_turns())
    async with app.run_test(size=(120, 40)) as pilot:
        await two_turns(app, pilot)
        await app.live.rewind(2, code=True)
        await pilot.pause()
        log = await app.live.read_log()
        await until(
            lambda: app.main.transcript.last_seq == log[-1].seq, "the rewind projected", pilot=pilot
        )
        live = app.main.transcript.durable_entries()
        # rewound by the engine's own call (as `/rewind 2 code` or ACP do): the prompt is back
        assert app.main.query_one(PromptInput).text == "now run the command"
    stored = transcript_of(log).entries
    assert live == stored
    rewind = next(e for e in stored if isinstance(e, RewindEntry))
    assert (rewind.restored, rewind.deleted, rewind.kept) == (("a.txt",), ("b.txt",), ())
    turn = next(e for e in stored if isinstance(e, TurnEntry) and e.number == 2)
    assert turn.changes is not None
    assert [(f.path, f.status) for f in turn.changes.files] == [
        ("a.txt", "modified"),
        ("b.txt", "added"),
    ]
    card = next(e for e in stored if isinstance(e, ToolEntry) and e.name == "run_shell")
    assert card.files == turn.changes.files
