"""`/rewind` (issue 30), the command headless runs and ACP run: it lists the prompts, rewinds the
files and the conversation (or one of them), names the files it kept, undoes, and answers a bad
turn with its usage and the valid turns."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.commands import REGISTRY
from engine.events import CommandRun, SessionRewind
from engine.gateway.scripted import Reply
from engine.tools import default_registry
from engine.tools.permission import HeadlessPolicy
from tests.agent.conftest import call
from tests.agent.harness import Opened, opened, payloads

EVERYTHING = HeadlessPolicy(allow=frozenset({"write_file", "edit_file", "run_shell"}))

SCRIPT = [
    Reply(tool_calls=[call("write_file", "w1", path="notes.txt", content="one\n")]),
    Reply(text="wrote it"),
    Reply(tool_calls=[call("run_shell", "s1", command="printf 'two\\n' >> notes.txt; touch b")]),
    Reply(text="appended"),
]


async def two_turns(run: Opened) -> None:
    await run.run("write the notes")
    await run.run("append and make b")
    assert (run.workspace / "notes.txt").read_text() == "one\ntwo\n"


async def test_bare_rewind_lists_the_prompts_with_their_files(tmp_path: Path) -> None:
    async with opened(tmp_path, SCRIPT, tools=default_registry(), responder=EVERYTHING) as run:
        await two_turns(run)
        result = await REGISTRY.run(run.agent, "/rewind")
        events = await run.events()
    assert result.ok
    assert not result.changed
    lines = result.text.splitlines()
    first = next(line for line in lines if "write the notes" in line)
    second = next(line for line in lines if "append and make b" in line)
    assert first.split()[0] == "1"
    assert "[1 file +1 -0]" in first
    assert second.split()[0] == "2"
    assert "[2 files +1 -0]" in second
    assert "usage: /rewind" in result.text
    assert payloads(events, SessionRewind) == []


async def test_rewind_n_puts_back_files_and_conversation_and_is_logged(tmp_path: Path) -> None:
    async with opened(tmp_path, SCRIPT, tools=default_registry(), responder=EVERYTHING) as run:
        await two_turns(run)
        result = await REGISTRY.run(run.agent, "/rewind 2")
        events = await run.events()
        workspace = run.workspace
    assert result.ok
    assert result.changed
    assert (workspace / "notes.txt").read_text() == "one\n"
    assert not (workspace / "b").exists()
    assert "files written: notes.txt" in result.text
    assert "files removed: b" in result.text
    assert "conversation restored: model" in result.text
    assert "prompt of turn 2: append and make b" in result.text
    assert any(line.startswith("not restored: ") for line in result.text.splitlines())
    (rewind,) = payloads(events, SessionRewind)
    assert (rewind.to_turn, rewind.conversation, rewind.code) == (2, True, True)
    (logged,) = payloads(events, CommandRun)
    assert logged.line == "/rewind 2"


async def test_conversation_only_leaves_the_files(tmp_path: Path) -> None:
    async with opened(tmp_path, SCRIPT, tools=default_registry(), responder=EVERYTHING) as run:
        await two_turns(run)
        result = await REGISTRY.run(run.agent, "/rewind 1 conversation")
        events = await run.events()
        workspace = run.workspace
    assert result.ok
    assert (workspace / "notes.txt").read_text() == "one\ntwo\n"
    assert "files written" not in result.text
    assert "not restored: files: a conversation rewind leaves the workspace" in result.text
    (rewind,) = payloads(events, SessionRewind)
    assert (rewind.conversation, rewind.code) == (True, False)


async def test_code_only_keeps_a_file_changed_by_someone_else_unless_overwrite(
    tmp_path: Path,
) -> None:
    async with opened(tmp_path, SCRIPT, tools=default_registry(), responder=EVERYTHING) as run:
        await two_turns(run)
        (run.workspace / "notes.txt").write_text("mine\n")
        kept = await REGISTRY.run(run.agent, "/rewind 1 code")
        assert (run.workspace / "notes.txt").read_text() == "mine\n"
        assert not (run.workspace / "b").exists()
        undone = await REGISTRY.run(run.agent, "/rewind undo")
        assert (run.workspace / "b").exists()
        forced = await REGISTRY.run(run.agent, "/rewind 1 code overwrite")
        events = await run.events()
        workspace = run.workspace
    assert "kept, changed by someone else (overwrite replaces them): notes.txt" in kept.text
    assert "conversation restored" not in kept.text
    assert undone.ok
    assert undone.text.startswith("undid the last rewind")
    assert forced.ok
    assert not (workspace / "notes.txt").exists()
    assert "files removed: " in forced.text
    assert "notes.txt" in forced.text
    assert [(r.conversation, r.code) for r in payloads(events, SessionRewind)] == [
        (False, True),
        (False, True),
        (False, True),
    ]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("/rewind 7", "no turn 7 in the history; the turns are 1, 2"),
        ("/rewind two", "'two' is not a turn; the turns are 1, 2"),
        ("/rewind 1 everything", "at most one of conversation, code"),
        ("/rewind 1 code conversation", "at most one of conversation, code"),
    ],
)
async def test_a_bad_turn_is_a_usage_error_naming_the_turns(
    tmp_path: Path, line: str, said: str
) -> None:
    async with opened(tmp_path, SCRIPT, tools=default_registry(), responder=EVERYTHING) as run:
        await two_turns(run)
        result = await REGISTRY.run(run.agent, line)
        events = await run.events()
    assert not result.ok
    assert said in result.text
    assert "usage: /rewind" in result.text
    assert payloads(events, SessionRewind) == []
    assert payloads(events, CommandRun) == []


async def test_undo_with_nothing_to_undo_says_so(tmp_path: Path) -> None:
    async with opened(tmp_path, [Reply(text="hi")]) as run:
        await run.run("hello")
        result = await REGISTRY.run(run.agent, "/rewind undo")
    assert not result.ok
    assert "there is no rewind to undo" in result.text
