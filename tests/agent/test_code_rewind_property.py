"""The property of issue 30: for random sequences of file operations (by the file tools and by
shell commands) and rewinds, the workspace after rewinding to turn k equals the workspace as it
was before turn k — whatever rewinds came before, code only or with the conversation, and
undone or not."""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.agent import open_agent
from engine.config import Config
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.store.sqlite.store import SQLiteStore
from engine.tools import default_registry
from engine.tools.permission import HeadlessPolicy

EVERYTHING = HeadlessPolicy(allow=frozenset({"write_file", "edit_file", "run_shell"}))
PATHS = ("a.txt", "b.txt", "sub/c.txt")


@dataclass(frozen=True)
class Write:
    path: str
    text: str

    def call(self) -> ToolCall:
        return ToolCall("", "write_file", {"path": self.path, "content": self.text})


@dataclass(frozen=True)
class Shell:
    command: str

    def call(self) -> ToolCall:
        return ToolCall("", "run_shell", {"command": self.command})


@dataclass(frozen=True)
class Rewind:
    index: int  # into the history's turns, modulo its length
    conversation: bool


@dataclass(frozen=True)
class Undo:
    pass


Step = Write | Shell | Rewind | Undo

operations = st.one_of(
    st.builds(Write, st.sampled_from(PATHS), st.text("xyz\n", min_size=0, max_size=6)),
    st.sampled_from(PATHS).map(lambda p: Shell(f"rm -f {p}")),
    st.sampled_from(PATHS).map(lambda p: Shell(f"mkdir -p sub && echo shell >> {p}")),
    st.just(Shell("mkdir -p sub/deep && echo new > sub/deep/n.txt")),
)
# a step: a turn doing one operation, or a rewind (the turn as an index into the history, code
# alone or with the conversation), or an undo of the last rewind
steps = st.lists(
    st.one_of(
        operations,
        st.builds(Rewind, st.integers(0, 50), st.booleans()),
        st.just(Undo()),
    ),
    min_size=2,
    max_size=9,
)


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


async def play(plan: list[Step], root: Path, data: Path) -> None:
    replies: list[Reply] = []
    for step in plan:
        if isinstance(step, Write | Shell):
            replies += [Reply(tool_calls=[step.call()]), Reply(text="ok")]
    store = SQLiteStore(data / "sessions.sqlite")
    await store.open()
    agent = await open_agent(
        config=Config(),
        cwd=root,
        store=store,
        gateway=ScriptedGateway(replies, strict=True),
        responder=EVERYTHING,
        tools=default_registry(),
    )
    try:
        before: dict[int, dict[str, str]] = {}  # the workspace before each turn
        after_rewinds: list[dict[str, str]] = []  # before each rewind, for its undo
        number = 0
        for step in plan:
            if isinstance(step, Write | Shell):
                number += 1
                before[number] = snapshot(root)
                await agent.send(f"turn {number}")
            elif isinstance(step, Rewind):
                history = [p.turn for p in await agent.rewind_points()]
                if not history:
                    continue
                turn = history[step.index % len(history)]
                state = snapshot(root)
                await agent.rewind(turn, conversation=step.conversation, code=True)
                after_rewinds.append(state)
                assert snapshot(root) == before[turn], (plan, turn)
            elif after_rewinds:
                state = after_rewinds.pop()
                await agent.rewind(None, code=True)
                assert snapshot(root) == state, plan
    finally:
        await agent.aclose()
        await store.aclose()


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(plan=steps)
def test_rewinding_to_turn_k_gives_the_workspace_before_turn_k(plan: list[Step]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, data = Path(tmp) / "ws", Path(tmp) / "data"
        root.mkdir()
        asyncio.run(play(plan, root, data))
