"""What the terminal key tests start from: a workspace, a Trellis home, sessions stored beforehand
through the store API (as the console stores them), and scripts for the offline model."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.agent import open_agent
from engine.config import Config
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.paths import SESSIONS_DB_NAME
from engine.store.sqlite.store import SQLiteStore
from engine.tools import ToolRegistry
from engine.tools.builtins.files import ReadFile

LONG_FILE_LINES = 30
"""Lines of `long.txt`: read by a tool, its card starts collapsed (more than `COLLAPSE_LINES`)."""


@dataclass(frozen=True, slots=True)
class Place:
    """A workspace, and the home whose `data` is the Trellis data directory (`Terminal(home=)`)."""

    workspace: Path
    home: Path

    @property
    def data(self) -> Path:
        return self.home / "data"

    def script(self, *replies: dict[str, object]) -> Path:
        """A `--script` file of these replies (README "--script")."""
        path = self.home / "script.json"
        path.write_text(json.dumps({"replies": list(replies)}), encoding="utf-8")
        return path


@pytest.fixture
def place(tmp_path: Path) -> Place:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello world\nsecond line\n", encoding="utf-8")
    lines = [f"long line {n}" for n in range(1, LONG_FILE_LINES + 1)]
    (workspace / "long.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    return Place(workspace, home)


def numbered(count: int, word: str = "line") -> str:
    """`count` lines, `word 1` to `word COUNT`: a reply taller than the screen."""
    return "\n\n".join(f"{word} {n}" for n in range(1, count + 1))


def stepping_clock(start: float = 1_796_000_000.0) -> Callable[[], float]:
    """A quarter second between readings: a replay has gaps to pace."""
    counter = itertools.count()
    return lambda: start + 0.25 * next(counter)


async def store_session(
    place: Place,
    turns: Sequence[tuple[str, Sequence[Reply]]],
    *,
    cwd: Path | None = None,
    start: float = 1_796_000_000.0,
) -> str:
    """A session of `turns` (each a prompt and the replies the model gives it), stored in the
    place's data directory as the console stores one, its clock from `start`; its id."""
    replies = [reply for _, answers in turns for reply in answers]
    async with SQLiteStore(place.data / SESSIONS_DB_NAME) as store:
        agent = await open_agent(
            config=Config(),
            cwd=cwd or place.workspace,
            store=store,
            gateway=ScriptedGateway(replies),
            tools=ToolRegistry([ReadFile()]),
            clock=stepping_clock(start),
        )
        for prompt, _ in turns:
            await agent.send(prompt)
        await agent.aclose()
        return agent.session_id


READ_NOTES: tuple[str, Sequence[Reply]] = (
    "read notes.txt",
    [
        Reply(text="Reading.", tool_calls=[ToolCall("r1", "read_file", {"path": "notes.txt"})]),
        Reply(text="It says hello."),
    ],
)
"""A turn with a tool call."""
