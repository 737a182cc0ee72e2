"""The permission broker: standing rules, "always" answers, restored rules, headless flags, cancel."""

from __future__ import annotations

import asyncio

import pytest

from engine.events import ModelBind, PermissionModeSet, PermissionRule, make_event
from engine.permission_mode import PermissionMode
from engine.tools import (
    HeadlessPolicy,
    PermissionAnswer,
    PermissionBroker,
    PermissionQuestion,
    ToolKind,
)


def request(tool: str = "run_shell", call_id: str = "c1") -> PermissionQuestion:
    return PermissionQuestion(call_id, tool, {"command": "ls"}, ToolKind.execute)


class Scripted:
    """A responder that answers from a list and counts how often it was asked."""

    def __init__(self, *answers: PermissionAnswer) -> None:
        self.answers = list(answers)
        self.asked: list[PermissionQuestion] = []

    async def __call__(self, req: PermissionQuestion) -> PermissionAnswer:
        self.asked.append(req)
        return self.answers.pop(0)


class Waiting:
    """A responder that never answers, like a dialog nobody clicks."""

    def __init__(self, expected: int = 1) -> None:
        self.expected = expected
        self.asked = 0
        self.started = asyncio.Event()
        self.withdrawn = 0

    async def __call__(self, req: PermissionQuestion) -> PermissionAnswer:
        self.asked += 1
        if self.asked == self.expected:
            self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.withdrawn += 1
            raise
        raise AssertionError("unreachable")


async def test_allow_once_asks_every_time() -> None:
    responder = Scripted(PermissionAnswer.allow_once, PermissionAnswer.deny_once)
    broker = PermissionBroker(responder)
    first = await broker.decide(request())
    assert (first.decision, first.rule, first.allowed) == ("allow", None, True)
    assert first.rule_event() is None
    second = await broker.decide(request())
    assert second.decision == "deny"
    assert second.message == "the user denied run_shell"
    assert len(responder.asked) == 2


async def test_allow_always_produces_a_rule_and_stops_asking() -> None:
    responder = Scripted(PermissionAnswer.allow_always)
    broker = PermissionBroker(responder)
    first = await broker.decide(request())
    assert (first.decision, first.rule) == ("allow", "allow")
    assert first.rule_event() == PermissionRule(tool="run_shell", decision="allow")
    again = await broker.decide(request(call_id="c2"))
    assert again.decision == "allow"
    assert again.rule is None
    assert "standing rule" in again.message
    assert len(responder.asked) == 1
    assert broker.rules == {"run_shell": "allow"}


async def test_deny_always_produces_a_deny_rule() -> None:
    broker = PermissionBroker(Scripted(PermissionAnswer.deny_always))
    first = await broker.decide(request("write_file"))
    assert (first.decision, first.rule) == ("deny", "deny")
    again = await broker.decide(request("write_file"))
    assert again.decision == "deny"
    assert "denied by a standing rule" in again.message


async def test_load_rules_from_events() -> None:
    events = [
        make_event(PermissionRule(tool="run_shell", decision="allow"), 0, 0.0),
        make_event(ModelBind(model="local", grant_epoch=1), 1, 0.0),
        make_event(PermissionRule(tool="edit_file", decision="allow"), 2, 0.0),
        make_event(PermissionRule(tool="edit_file", decision="deny"), 3, 0.0),
    ]
    responder = Scripted()
    broker = PermissionBroker(responder)
    broker.load_rules(events)
    assert broker.rules == {"run_shell": "allow", "edit_file": "deny"}
    assert (await broker.decide(request("run_shell"))).decision == "allow"
    assert (await broker.decide(request("edit_file"))).decision == "deny"
    assert responder.asked == []


async def test_a_failing_responder_denies() -> None:
    async def broken(req: PermissionQuestion) -> PermissionAnswer:
        raise OSError("dialog gone")

    decision = await PermissionBroker(broken).decide(request())
    assert decision.decision == "deny"
    assert "OSError: dialog gone" in decision.message


async def test_cancel_pending_resolves_every_waiting_request() -> None:
    responder = Waiting(expected=3)
    broker = PermissionBroker(responder)
    waits = [asyncio.create_task(broker.decide(request(call_id=f"c{n}"))) for n in range(3)]
    await responder.started.wait()
    assert broker.pending == 3
    broker.cancel_pending()
    decisions = await asyncio.gather(*waits)
    assert [d.decision for d in decisions] == ["cancelled"] * 3
    assert responder.withdrawn == 3
    assert broker.pending == 0


async def test_cancelling_the_waiting_task_withdraws_the_question() -> None:
    responder = Waiting()
    broker = PermissionBroker(responder)
    waiting = asyncio.create_task(broker.decide(request()))
    await responder.started.wait()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    for _ in range(10):
        await asyncio.sleep(0)
    assert responder.withdrawn == 1
    assert broker.pending == 0


async def test_headless_default_denies_naming_the_flags() -> None:
    decision = await PermissionBroker(HeadlessPolicy()).decide(request())
    assert decision.decision == "deny"
    assert (
        decision.message
        == "run_shell needs permission; rerun with --allow run_shell, or --approve-all"
    )
    assert decision.rule is None
    edit = PermissionQuestion("c2", "write_file", {"path": "a"}, ToolKind.edit)
    assert (await PermissionBroker(HeadlessPolicy()).decide(edit)).message == (
        "write_file needs permission; rerun with --allow write_file or --mode accept-edits, "
        "or --approve-all"
    )


async def test_headless_allow() -> None:
    broker = PermissionBroker(HeadlessPolicy(allow=frozenset({"edit_file"})))
    assert (await broker.decide(request("edit_file"))).decision == "allow"
    assert (await broker.decide(request("run_shell"))).decision == "deny"


def question(tool: str, kind: ToolKind) -> PermissionQuestion:
    return PermissionQuestion(f"call-{tool}", tool, {}, kind)


EDIT, SHELL, MCP = (
    question("write_file", ToolKind.edit),
    question("run_shell", ToolKind.execute),
    question("files__delete", ToolKind.other),
)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("ask", {"write_file": "asked", "run_shell": "asked", "files__delete": "asked"}),
        ("accept-edits", {"write_file": "allow", "run_shell": "asked", "files__delete": "asked"}),
        ("read-only", {"write_file": "deny", "run_shell": "deny", "files__delete": "deny"}),
        ("approve-all", {"write_file": "allow", "run_shell": "allow", "files__delete": "allow"}),
    ],
)
async def test_each_mode_decides_before_the_responder(
    mode: PermissionMode, expected: dict[str, str]
) -> None:
    """What each mode does with a file edit, a command and an MCP tool: the responder (here
    answering yes) is asked only where the mode leaves the call to it."""
    responder = Scripted(*[PermissionAnswer.allow_once] * 3)
    broker = PermissionBroker(responder, mode=mode)
    seen: dict[str, str] = {}
    for ask in (EDIT, SHELL, MCP):
        decision = await broker.decide(ask)
        seen[ask.tool] = "asked" if ask in responder.asked else decision.decision
    assert seen == expected
    assert broker.rules == {}


async def test_read_only_refusal_says_why() -> None:
    broker = PermissionBroker(Scripted(), mode="read-only")
    refused = await broker.decide(EDIT)
    assert refused.decision == "deny"
    assert "write_file was refused: the session is in read-only mode" in refused.message
    # a standing "allow" does not open a read-only session
    broker.follow(PermissionRule(tool="write_file", decision="allow"))
    assert (await broker.decide(EDIT)).decision == "deny"


async def test_a_standing_deny_outlasts_approve_all() -> None:
    broker = PermissionBroker(Scripted(), mode="approve-all")
    broker.follow(PermissionRule(tool="run_shell", decision="deny"))
    assert (await broker.decide(SHELL)).decision == "deny"
    assert (await broker.decide(EDIT)).message == "write_file is allowed by approve all mode"


def test_the_mode_follows_the_log() -> None:
    broker = PermissionBroker(Scripted())
    broker.load_rules(
        [
            make_event(PermissionModeSet(mode="read-only"), 0, 0.0),
            make_event(PermissionModeSet(mode="accept-edits"), 1, 0.0),
        ]
    )
    assert broker.mode == "accept-edits"
