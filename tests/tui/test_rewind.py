"""Rewind in the console (Pilot): `/rewind` and Esc twice open the list of prompts with their
files; Enter asks what to take back, saying what will change first; a rewind puts the prompt
back in the input, the transcript shows it and a notice says what was restored. (The keys
through a real terminal: tests/tui/keys/test_rewind_keys.py.)"""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Checkbox, DataTable, OptionList

from app.tui.screens.rewind import RewindDialog, RewindList, RewindRequest
from app.tui.widgets.entries import LineEntry, ToolCard, TurnRule
from app.tui.widgets.prompt_input import PromptInput
from engine.agent.code_rewind import CodePlan
from engine.agent.rewind import RewindPoint
from engine.config import CheckpointsConfig, Config
from engine.gateway.scripted import Reply
from engine.message import ToolCall
from replay.entries import CheckpointsOffEntry, CommandEntry, RewindEntry, ToolEntry, TurnEntry
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_long_session import opened
from tests.tui.test_replay import opened as replay_opened
from tests.tui.test_replay import replay_app
from tests.waiting import until


def shell_turns() -> list[Reply]:
    """Turn 1 writes a.txt with the file tool; turn 2 runs a command that changes a.txt and
    creates b.txt."""
    return [
        Reply(
            text="writing",
            tool_calls=[ToolCall("w1", "write_file", {"path": "a.txt", "content": "one\n"})],
        ),
        Reply(text="wrote a.txt"),
        Reply(
            text="running",
            tool_calls=[
                ToolCall("s1", "run_shell", {"command": "echo two >> a.txt && echo new > b.txt"})
            ],
        ),
        Reply(text="ran it"),
    ]


async def two_turns(app: ConsoleTestApp, pilot: Pilot[None]) -> None:
    await opened(app, pilot)
    await send(app, pilot, "/mode approve-all")
    await settle(app, pilot)
    await send(app, pilot, "write a.txt please")
    await settle(app, pilot)
    await send(app, pilot, "now run the command")
    await settle(app, pilot)
    await until(
        lambda: turn_of(rules(app)[-1]).changes is not None, "turn 2's changes shown", pilot=pilot
    )


def turn_of(rule: TurnRule) -> TurnEntry:
    assert isinstance(rule.entry, TurnEntry)
    return rule.entry


def shell_card(app: ConsoleTestApp) -> ToolCard:
    return next(
        c
        for c in app.main.query(ToolCard)
        if isinstance(c.entry, ToolEntry) and c.entry.name == "run_shell"
    )


def rules(app: ConsoleTestApp) -> list[TurnRule]:
    return list(app.main.query(TurnRule))


def shown(widget: LineEntry | ToolCard) -> str:
    return str(widget.render())


async def open_list(app: ConsoleTestApp, pilot: Pilot[None]) -> RewindList:
    await until(lambda: isinstance(app.screen, RewindList), "the rewind list opened", pilot=pilot)
    await pilot.pause()
    assert isinstance(app.screen, RewindList)
    return app.screen


async def open_dialog(app: ConsoleTestApp, pilot: Pilot[None]) -> RewindDialog:
    await pilot.press("enter")
    await until(lambda: isinstance(app.screen, RewindDialog), "the choice opened", pilot=pilot)
    await pilot.pause()
    assert isinstance(app.screen, RewindDialog)
    return app.screen


def rows(screen: RewindList) -> list[list[str]]:
    table = screen.query_one(DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def dialog_text(dialog: RewindDialog) -> str:
    return str(dialog.query_one("#plan-text").render())


async def test_rewind_lists_the_prompts_and_takes_back_code_and_conversation(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, shell_turns())
    async with app.run_test(size=(120, 40)) as pilot:
        await two_turns(app, pilot)
        await send(app, pilot, "/rewind")
        screen = await open_list(app, pilot)
        listed = rows(screen)
        assert [r[0] for r in listed] == ["2", "1"]  # newest first
        assert listed[0][2] == "now run the command"
        assert listed[0][3] == "2 files +2 -0"
        assert listed[1][3] == "1 file +1 -0"

        dialog = await open_dialog(app, pilot)  # turn 2, highlighted first
        text = dialog_text(dialog)
        assert "Prompt: now run the command" in text
        assert "Writes back (1):\n↺ a.txt" in text
        assert "Removes (1):\n✗ b.txt" in text
        assert "Cannot be restored:" in text
        assert "the workspace's own .git" in text
        options = [str(o.prompt) for o in dialog.query_one(OptionList).options]
        assert options == ["Code and conversation", "Conversation only", "Code only", "Cancel"]
        assert list(dialog.query(Checkbox)) == []  # no file changed by someone else
        assert (workspace / "b.txt").exists()  # nothing touched before the choice

        await pilot.press("enter")  # Code and conversation
        await until(lambda: app.screen is app.main, "back on the main screen", pilot=pilot)
        await until(lambda: not (workspace / "b.txt").exists(), "b.txt removed", pilot=pilot)
        await pilot.pause()
        assert (workspace / "a.txt").read_text(encoding="utf-8") == "one\n"
        assert app.main.query_one(PromptInput).text == "now run the command"
        (rewind,) = [w for w in app.main.query(LineEntry) if isinstance(w.entry, RewindEntry)]
        text = shown(rewind)
        assert "Rewound to turn 2 (code and conversation), before: now run the command" in text
        assert "restored: a.txt\n  removed: b.txt" in text
        notices = [n.message for n in app._notifications]
        assert any("Files: 1 restored, 1 removed." in n for n in notices), notices

        # the undo comes first in the list, and takes the rewind back
        app.main.query_one(PromptInput).clear()
        await send(app, pilot, "/rewind")
        screen = await open_list(app, pilot)
        assert rows(screen)[0][2] == "Undo the last rewind (to turn 2)"
        assert [r[0] for r in rows(screen)[1:]] == ["1"]  # turn 2 left the history
        dialog = await open_dialog(app, pilot)
        assert dialog.undo
        await pilot.press("enter")
        await until(lambda: (workspace / "b.txt").exists(), "b.txt back", pilot=pilot)
        assert (workspace / "a.txt").read_text(encoding="utf-8") == "one\ntwo\n"
        await pilot.pause()
        entries = [w for w in app.main.query(LineEntry) if isinstance(w.entry, RewindEntry)]
        assert "Undid the rewind to turn 2" in shown(entries[-1])


async def test_a_file_changed_since_is_listed_and_kept_unless_overwritten(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, shell_turns())
    async with app.run_test(size=(120, 40)) as pilot:
        await two_turns(app, pilot)
        (workspace / "b.txt").write_text("mine\n", encoding="utf-8")  # someone else's edit
        await send(app, pilot, "/rewind")
        await open_list(app, pilot)
        dialog = await open_dialog(app, pilot)
        said = "Changed since by someone else, kept as they are unless overwritten (1):\n! b.txt"
        assert said in dialog_text(dialog)
        box = dialog.query_one(Checkbox)
        assert not box.value
        await pilot.press("down", "down", "enter")  # Code only, overwrite not ticked
        await until(lambda: app.screen is app.main, "back on the main screen", pilot=pilot)
        await until(
            lambda: (workspace / "a.txt").read_text() == "one\n", "a.txt restored", pilot=pilot
        )
        assert (workspace / "b.txt").read_text(encoding="utf-8") == "mine\n"
        assert app.main.query_one(PromptInput).text == ""  # the conversation stays
        notices = [n.message for n in app._notifications]
        assert any("Kept, changed by someone else: b.txt." in n for n in notices), notices

        # now with `o`: overwritten
        await app.live.rewind(None, code=True)  # undo it (the engine's own path)
        await pilot.pause()
        (workspace / "b.txt").write_text("mine again\n", encoding="utf-8")
        await send(app, pilot, "/rewind")
        await open_list(app, pilot)
        await pilot.press("down")  # past the undo row
        dialog = await open_dialog(app, pilot)
        await pilot.press("o")
        await pilot.pause()
        assert dialog.query_one(Checkbox).value
        assert "Changed since by someone else, overwritten (1):" in dialog_text(dialog)
        await pilot.press("enter")
        await until(lambda: not (workspace / "b.txt").exists(), "b.txt overwritten", pilot=pilot)


async def test_esc_twice_on_an_empty_idle_prompt_opens_the_list_and_once_does_not(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text="hello")])
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "hi")
        await settle(app, pilot)
        await pilot.press("escape")
        await pilot.pause(0.6)  # too long after: a single Esc again
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main
        prompt = app.main.query_one(PromptInput)
        prompt.load_text("draft")
        await pilot.press("escape", "escape")  # not on an empty prompt
        await pilot.pause()
        assert app.screen is app.main
        prompt.clear()
        await pilot.pause(0.6)
        await pilot.press("escape", "escape")
        screen = await open_list(app, pilot)
        assert [r[0] for r in rows(screen)] == ["1"]
        dialog = await open_dialog(app, pilot)
        options = dialog.query_one(OptionList).options
        assert [o.disabled for o in options] == [True, False, True, False]
        assert "no change to the files is recorded since this prompt" in str(options[0].prompt)
        await pilot.press("escape")  # cancels the choice: the list stays
        await pilot.pause()
        assert isinstance(app.screen, RewindList)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


class DialogApp(App[None]):
    """The choice alone, over an empty screen: what it is dismissed with is kept."""

    def __init__(self, dialog: RewindDialog) -> None:
        super().__init__()
        self.dialog = dialog
        self.answers: list[RewindRequest | None] = []

    async def on_mount(self) -> None:
        await self.push_screen(self.dialog, callback=self.answers.append)


async def test_a_refused_code_part_greys_the_code_choices_with_the_reason() -> None:
    reason = "this session's checkpoints are not on this host"
    dialog = RewindDialog(RewindPoint(3, 10, "fix it"), CodePlan(3, refused=reason))
    app = DialogApp(dialog)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert f"Code: {reason}." in dialog_text(dialog)
        options = dialog.query_one(OptionList).options
        assert [o.disabled for o in options] == [True, False, True, False]
        assert reason in str(options[0].prompt)
        assert reason in str(options[2].prompt)
        await pilot.press("down", "enter")  # from Conversation only, down skips Code only
        await pilot.pause()
    assert app.answers == [None]  # Cancel

    app = DialogApp(RewindDialog(RewindPoint(3, 10, "fix it"), CodePlan(3, refused=reason)))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
    assert app.answers == [RewindRequest(3, conversation=True, code=False)]


def checkpoints_off_lines(screen: Screen[None]) -> list[str]:
    return [shown(w) for w in screen.query(LineEntry) if isinstance(w.entry, CheckpointsOffEntry)]


async def test_checkpoints_off_is_said_once_and_the_code_choices_are_greyed(
    workspace: Path, data: Path
) -> None:
    """Checkpoints off is a transcript entry, said once where it began (live and replayed),
    with no notice besides."""
    config = Config(checkpoints=CheckpointsConfig(enabled=False))
    app = ConsoleTestApp(workspace, data, shell_turns(), config=config)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "/mode approve-all")
        await settle(app, pilot)
        await send(app, pilot, "write a.txt please")
        await settle(app, pilot)
        await send(app, pilot, "now run the command")
        await settle(app, pilot)
        said = checkpoints_off_lines(app.main)
        assert len(said) == 1, said
        assert said[0].startswith("⚠ Checkpoints off from here on"), said
        assert [n.message for n in app._notifications if "heckpoints" in n.message] == []
        assert turn_of(rules(app)[-1]).changes is None
        await send(app, pilot, "/rewind")
        await open_list(app, pilot)
        dialog = await open_dialog(app, pilot)
        options = dialog.query_one(OptionList).options
        assert [o.disabled for o in options] == [True, False, True, False]
        session_id = app.live.session_id
    replay = replay_app(workspace, data, session_id)
    async with replay.run_test(size=(120, 40)) as pilot:
        screen = await replay_opened(pilot)
        await pilot.press("end")  # the whole log
        await pilot.pause()
        assert len(checkpoints_off_lines(screen)) == 1


async def test_the_completed_command_opens_the_list_and_one_with_arguments_is_the_text_command(
    workspace: Path, data: Path
) -> None:
    """`/rew` and Enter (the suggestion `/rewind `, sent) opens the list; `/rewind 1
    conversation` is the registry's command: it rewinds and answers in the transcript."""
    app = ConsoleTestApp(workspace, data, shell_turns())
    async with app.run_test(size=(120, 40)) as pilot:
        await two_turns(app, pilot)
        prompt = app.main.query_one(PromptInput)
        prompt.focus()
        await pilot.press(*"/rew")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await open_list(app, pilot)
        await pilot.press("escape")
        await until(lambda: app.screen is app.main, "the list closed", pilot=pilot)
        prompt.clear()
        await send(app, pilot, "/rewind 1 conversation")
        await settle(app, pilot)
        await until(
            lambda: any(isinstance(w.entry, RewindEntry) for w in app.main.query(LineEntry)),
            "the rewind shown",
            pilot=pilot,
        )
        assert not isinstance(app.screen, RewindList)
        answer = [w for w in app.main.query(LineEntry) if isinstance(w.entry, CommandEntry)][-1]
        assert "/rewind 1 conversation" in shown(answer)
        assert "rewound to before turn 1" in shown(answer)
        assert (workspace / "b.txt").exists()  # the conversation only: the files stay
        assert prompt.text == "write a.txt please"
