"""A front end that writes the session's files (an ACP editor with `fs.writeTextFile`, which may
hold unsaved buffers) gets the files' part of a rewind refused with the reason, from what it
lends the tools; the conversation's part still runs, and an undo of a rewind that changed no
file is not refused for files it never touches."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.agent.rewind import RewindError
from engine.commands import REGISTRY
from engine.events import SessionRewind
from engine.gateway.scripted import Reply
from engine.tools import default_registry
from engine.tools.front_end import LOCAL, FrontEndAccess
from engine.tools.permission import HeadlessPolicy
from tests.agent.conftest import call
from tests.agent.harness import opened, payloads

EVERYTHING = HeadlessPolicy(allow=frozenset({"run_shell"}))
SCRIPT = [
    Reply(tool_calls=[call("run_shell", "s1", command="printf 'one\\n' > notes.txt")]),
    Reply(text="wrote it"),
    Reply(text="second"),
]


class EditorFiles:
    """An editor's files: a rewind must never write through them, nor around them."""

    async def write_text(self, path: Path, content: str) -> None:
        raise AssertionError(f"a rewind wrote {path} through the editor")


async def test_an_editor_that_writes_the_files_gets_the_files_part_refused(
    tmp_path: Path,
) -> None:
    lent = [LOCAL]
    async with opened(
        tmp_path,
        SCRIPT,
        tools=default_registry(),
        responder=EVERYTHING,
        front_end=lambda: lent[0],
    ) as run:
        await run.run("write the notes")
        await run.run("then talk")
        assert run.agent.files_held_by_front_end() is None
        lent[0] = FrontEndAccess(writer=EditorFiles())
        reason = run.agent.files_held_by_front_end()
        assert reason is not None
        assert "editor" in reason
        _, plan = await run.agent.plan_rewind(1)
        assert plan is not None
        assert plan.refused == reason
        with pytest.raises(RewindError, match="cannot rewind the files: the editor"):
            await run.agent.rewind(1, conversation=False, code=True)
        result = await REGISTRY.run(run.agent, "/rewind 1")
        assert result.ok
        assert f"files not rewound: {reason}" in result.text
        assert (run.workspace / "notes.txt").read_text() == "one\n"  # left as the agent left it
        (rewind,) = payloads(await run.events(), SessionRewind)
        assert (rewind.conversation, rewind.code_refused) == (True, reason)
        # the undo of a rewind that changed no file touches no file: nothing to refuse
        undo = await run.agent.rewind(None, code=True)
        assert undo.code_refused is None
