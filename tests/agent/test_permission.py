"""Permission through the loop (issue 4): the headless flags, "allow always" as a `permission/rule`
event honoured after resume, and paths that escape the workspace refused as error results."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.agent import open_agent
from engine.config import Config
from engine.events import (
    PermissionDecision,
    PermissionModeSet,
    PermissionRule,
    ToolResultRecord,
    TurnEnd,
)
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import ToolCall
from engine.permission_mode import PermissionMode
from engine.store.sqlite.store import SQLiteStore
from engine.tools.permission import (
    HeadlessPolicy,
    PermissionAnswer,
    PermissionQuestion,
    PermissionReply,
)
from tests.agent.harness import contents, opened, payloads


def _write(call_id: str, path: str = "out.txt", content: str = "written\n") -> list[Reply]:
    return [
        Reply(tool_calls=[ToolCall(call_id, "write_file", {"path": path, "content": content})]),
        Reply(text="done"),
    ]


class CountingResponder:
    """Answers every request with `answer` and remembers what it was asked."""

    def __init__(self, answer: PermissionAnswer) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def __call__(self, request: PermissionQuestion) -> PermissionReply:
        self.asked.append(request.tool)
        return PermissionReply(self.answer)


@pytest.mark.parametrize(
    ("policy", "mode", "allowed", "says"),
    [
        (HeadlessPolicy(), None, False, "rerun with --allow write_file or --mode accept-edits"),
        (HeadlessPolicy(allow=frozenset({"write_file"})), None, True, ""),
        (HeadlessPolicy(allow=frozenset({"edit_file"})), None, False, "--allow write_file"),
        (HeadlessPolicy(), "approve-all", True, ""),
        (HeadlessPolicy(), "accept-edits", True, ""),
        (HeadlessPolicy(), "read-only", False, "the session is in read-only mode"),
    ],
    ids=["default-deny", "allow-tool", "allow-other-tool", "approve-all", "accept-edits", "ro"],
)
async def test_headless_flags(
    tmp_path: Path,
    policy: HeadlessPolicy,
    mode: PermissionMode | None,
    allowed: bool,
    says: str,
) -> None:
    async with opened(tmp_path, _write("c1"), responder=policy, mode=mode) as run:
        await run.run("write the file")
        events = await run.events()
        target = run.workspace / "out.txt"
        assert target.exists() is allowed
    (decision,) = payloads(events, PermissionDecision)
    assert decision.call_id == "c1"
    assert decision.decision == ("allow" if allowed else "deny")
    (result,) = payloads(events, ToolResultRecord)
    assert result.is_error is not allowed
    assert says in result.content
    assert payloads(events, PermissionRule) == []  # flags answer once; they make no rule
    assert [t.reason for t in payloads(events, TurnEnd)] == ["completed"]
    assert [m.mode for m in payloads(events, PermissionModeSet)] == ([mode] if mode else [])


async def test_read_only_tools_are_never_asked(tmp_path: Path) -> None:
    responder = CountingResponder(PermissionAnswer.deny_once)
    script = [Reply(tool_calls=[ToolCall("c1", "list_files", {"path": "."})]), Reply(text="ok")]
    async with opened(tmp_path, script, responder=responder) as run:
        await run.run("list")
        events = await run.events()
    assert responder.asked == []
    assert payloads(events, PermissionDecision) == []
    assert not payloads(events, ToolResultRecord)[0].is_error


@pytest.mark.parametrize(
    ("answer", "rule", "written"),
    [(PermissionAnswer.allow_always, "allow", True), (PermissionAnswer.deny_always, "deny", False)],
)
async def test_always_is_a_rule_event_honoured_after_resume(
    tmp_path: Path, answer: PermissionAnswer, rule: str, written: bool
) -> None:
    first = CountingResponder(answer)
    script = _write("c1", "one.txt") + _write("c2", "two.txt")
    async with opened(tmp_path, script, responder=first) as run:
        await run.run("write one")
        await run.run("write two")  # the standing rule answers; nobody is asked
        session_id, workspace = run.agent.session_id, run.workspace
    assert first.asked == ["write_file"]

    # Resumed with a responder that answers the opposite: the recorded rule still decides.
    opposite = PermissionAnswer.deny_once if written else PermissionAnswer.allow_once
    second = CountingResponder(opposite)
    gateway = ScriptedGateway(_write("c3", "three.txt"), strict=True)
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=Config(),
            cwd=workspace,
            store=store,
            session_id=session_id,
            gateway=gateway,
            responder=second,
        )
        try:
            agent.send("write three")
            await agent.when_idle()
        finally:
            await agent.aclose()
        events = (await store.inspect(session_id)).events
    assert second.asked == []
    rules = payloads(events, PermissionRule)
    assert [(r.tool, r.decision) for r in rules] == [("write_file", rule)]
    decisions = [d.decision for d in payloads(events, PermissionDecision)]
    assert decisions == [rule] * 3
    for name in ("one.txt", "two.txt", "three.txt"):
        assert (workspace / name).exists() is written
    # the rule event follows the decision that made it, before the result
    types = [e.type for e in events]
    first_rule = types.index("permission/rule")
    assert types[first_rule - 1] == "permission/decision"
    assert types[first_rule + 1] == "tool/result"


# --- paths that escape the workspace -----------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read_file", {"path": "../secret.txt"}),
        ("read_file", {"path": "link/secret.txt"}),
        ("read_file", {"path": "direct-link"}),
        ("list_files", {"path": ".."}),
        ("list_files", {"path": "link"}),
        ("search", {"pattern": "TOP", "path": "link"}),
        ("write_file", {"path": "../evil.txt", "content": "x"}),
        ("write_file", {"path": "link/evil.txt", "content": "x"}),
    ],
)
async def test_path_escapes_are_error_results(
    tmp_path: Path, tool: str, arguments: dict[str, str]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    os.symlink(outside, workspace / "link")
    os.symlink(outside / "secret.txt", workspace / "direct-link")
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    script = [Reply(tool_calls=[ToolCall("c1", tool, arguments)]), Reply(text="ok")]
    async with opened(tmp_path, script, mode="approve-all") as run:
        await run.run("try to escape")
        events = await run.events()
        request = run.gateway.requests[1]
    (result,) = payloads(events, ToolResultRecord)
    assert result.is_error
    assert "outside the workspace" in result.content
    assert "TOP SECRET" not in result.content
    assert not any("TOP SECRET" in text for text in contents(request))
    assert not (tmp_path / "evil.txt").exists()
    assert not (outside / "evil.txt").exists()
