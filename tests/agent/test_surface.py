"""The engine's public surface as a front end uses it: send handles, live tool and permission
progress, read-only views, and the defects independent checks found (issue: engine surface)."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from engine.agent import Allow, PromptDecision, PromptSubmission, Reject
from engine.agent.admission import Next
from engine.agent.send import Blocked, Dropped, TurnOutcome
from engine.agent.views import outbox_view
from engine.config import Config, ModelEntry
from engine.context.area import AreaFlowState, AreaLifeState
from engine.context.areas import NoticeArea, SubtaskArea
from engine.errors import TrellisError
from engine.events import (
    AgentStatus,
    Event,
    OutboxChanged,
    PermissionRequest,
    SessionTitle,
    StepStart,
    ToolCallRecord,
    ToolOutputDelta,
    ToolPending,
    UserMessage,
)
from engine.gateway.scripted import Reply
from engine.message import AdditionalContext, Source
from engine.privacy import PrivacyClass
from engine.tools import PermissionAnswer, ToolRegistry
from engine.tools.builtins.shell import RunShell
from tests.agent.conftest import (
    FixedTool,
    GateTool,
    HeldAdmission,
    MakeAgent,
    SilentResponder,
    call,
    of_type,
    record,
)
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]

# --- the send handle ------------------------------------------------------------------------------


async def test_a_send_reports_its_turn_and_end_reason(make_agent: MakeAgent) -> None:
    agent = await make_agent([Reply(text="hello")])
    handle = agent.send("hi")
    assert handle.position == 0
    assert await handle.turn() == 1
    outcome = await handle
    assert outcome == TurnOutcome(1, "completed", "")
    assert handle.state == "done"


async def test_a_blocked_send_says_why_and_opens_no_turn(make_agent: MakeAgent) -> None:
    agent = await make_agent([])

    async def refuse(submission: PromptSubmission, next: Next) -> PromptDecision:
        return Reject("no secrets in prompts")

    agent.on_prompt(refuse)
    handle = agent.send("secret=hunter2")
    assert await handle == Blocked("no secrets in prompts")
    assert await handle.turn() is None
    assert not any(isinstance(e.data, UserMessage) for e in agent.log)


async def test_queued_sends_know_their_place_and_dropped_ones_say_so(
    make_agent: MakeAgent,
) -> None:
    gate = GateTool()
    agent = await make_agent(
        [Reply(tool_calls=[call("gate")]), Reply(text="first done")],
        tools=ToolRegistry([gate]),
    )
    first = agent.send("first")
    await gate.started.wait()
    second = agent.send("second")
    third = agent.send("third")
    assert (first.position, second.position, third.position) == (0, 1, 2)
    assert second.state == "queued"
    await agent.aclose()
    outcome = await first
    assert isinstance(outcome, TurnOutcome)
    assert outcome.reason == "disposed"
    assert isinstance(await second, Dropped)
    assert isinstance(await third, Dropped)


async def test_a_cancelled_turn_reports_cancelled(make_agent: MakeAgent) -> None:
    gate = GateTool()
    agent = await make_agent([Reply(tool_calls=[call("gate")])], tools=ToolRegistry([gate]))
    handle = agent.send("wait")
    await gate.started.wait()
    agent.cancel()
    outcome = await handle
    assert isinstance(outcome, TurnOutcome)
    assert outcome.reason == "cancelled"
    assert outcome.message == "Cancelled by the user."


# --- live progress ----------------------------------------------------------------------------------


async def test_a_tool_card_can_appear_before_the_reply_ends(make_agent: MakeAgent) -> None:
    agent = await make_agent(
        [
            Reply(
                text="reading now", tool_calls=[call("probe", "c7", path="a.py")], chunk_delay=0.001
            ),
            Reply(text="done"),
        ],
        tools=ToolRegistry([FixedTool("probe")]),
    )
    recorder = record(agent)
    await agent.send("go")
    kinds = recorder.types()
    pending = recorder.of(ToolPending)
    assert pending, "no tool/pending was sent"
    assert pending[-1].call_id == "c7"
    assert pending[-1].name == "probe"
    assert pending[-1].arguments == '{"path": "a.py"}'
    assert kinds.index("tool/pending") < kinds.index("assistant/message") < kinds.index("tool/call")


async def test_a_running_command_shows_its_output_line_by_line(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    command = "echo one; sleep 0.05; echo two; printf three"
    agent = await make_agent(
        [Reply(tool_calls=[call("run_shell", "s1", command=command)]), Reply(text="ok")],
        tools=ToolRegistry([RunShell()]),
        responder=_allow,
    )
    recorder = record(agent)
    await agent.send("run it")
    chunks = [o.text for o in recorder.of(ToolOutputDelta) if o.call_id == "s1"]
    assert chunks == ["one\n", "two\n", "three"]
    kinds = recorder.types()
    assert kinds.index("tool/output") < kinds.index("tool/result")


async def _allow(question: object) -> PermissionAnswer:
    return PermissionAnswer.allow_once


async def test_a_permission_wait_shows_waiting_and_the_request(make_agent: MakeAgent) -> None:
    responder = SilentResponder()
    agent = await make_agent(
        [Reply(tool_calls=[call("danger", "d1")])],
        tools=ToolRegistry([FixedTool("danger", needs_permission=True)]),
        responder=responder,
    )
    recorder = record(agent)
    handle = agent.send("do it")
    await responder.asked.wait()
    assert agent.status == "waiting"
    request = recorder.of(PermissionRequest)
    assert [(r.call_id, r.tool, r.kind) for r in request] == [("d1", "danger", "execute")]
    agent.cancel()
    await handle
    await agent.when_idle()
    statuses = [s.status for s in recorder.of(AgentStatus)]
    assert statuses[:2] == ["running", "waiting"]
    assert statuses[-1] == "idle"


async def test_a_standing_rule_answers_without_a_request(make_agent: MakeAgent) -> None:
    agent = await make_agent(
        [
            Reply(tool_calls=[call("danger")]),
            Reply(text="ok"),
            Reply(tool_calls=[call("danger")]),
            Reply(text="ok again"),
        ],
        tools=ToolRegistry([FixedTool("danger", needs_permission=True)]),
        responder=_allow_always,
    )
    await agent.send("first")
    recorder = record(agent)
    await agent.send("second")
    assert recorder.of(PermissionRequest) == []
    assert "waiting" not in [s.status for s in recorder.of(AgentStatus)]


async def _allow_always(question: object) -> PermissionAnswer:
    return PermissionAnswer.allow_always


# --- read-only views --------------------------------------------------------------------------------


async def test_the_views_show_areas_pins_the_model_and_the_last_request(
    make_agent: MakeAgent,
) -> None:
    agent = await make_agent(
        [Reply(text="working", tool_calls=[call("probe")]), Reply(text="ok")],
        tools=ToolRegistry([FixedTool("probe")]),
    )
    notice = agent.register_area(NoticeArea("the build is red"))
    subtask = agent.register_area(SubtaskArea("fix the build"))
    pin = agent.pin("always run the tests")
    assert agent.last_assembly is None
    await agent.send("fix it")
    views = {v.id: v for v in agent.areas}
    assert set(views) == {notice, subtask}
    assert views[subtask].kind == "subtask"
    assert views[subtask].life is AreaLifeState.retain
    assert views[subtask].flow is AreaFlowState.exclusive
    assert views[subtask].cursor
    assert views[subtask].earliest is not None
    assert [(p.id, p.text) for p in agent.pins] == [(pin, "always run the tests")]
    model = agent.model
    assert (model.name, model.provider, model.grant_epoch) == ("scripted", "scripted", 1)
    assert model.egress is PrivacyClass.restricted
    last = agent.last_assembly
    assert last is not None
    assert last.turn is None  # the turn has ended
    items_chars = sum(i.chars for i in last.items)
    floor_chars = sum(b.chars for b in last.floor)
    assert items_chars + floor_chars == last.figures.chars
    assert [b.key for b in last.floor if b.layer == 4] == [f"pin:{pin}"]
    assert any(i.source == Source("user") and i.kind.value == "message" for i in last.items)
    assert any(i.reserved and i.owner == subtask for i in last.items)
    step = of_type(list(agent.log), StepStart)[-1]
    assert step.prefix_digest == last.prefix_digest
    assert step.egress is PrivacyClass.restricted
    assert step.label == last.label


async def test_the_outbox_view_shows_what_waits_for_the_boundary(make_agent: MakeAgent) -> None:
    gate = GateTool()
    agent = await make_agent(
        [Reply(tool_calls=[call("gate")]), Reply(text="ok")], tools=ToolRegistry([gate])
    )
    changes: list[OutboxChanged] = []
    agent.subscribe(lambda e: changes.append(e.data) if type(e.data) is OutboxChanged else None)
    handle = agent.send("wait")
    await gate.started.wait()
    agent.inject(AdditionalContext("ci is green", Source("plugin", "ci")))
    agent.steer("hurry")
    view = agent.outbox
    assert view.contexts == (("ci is green", Source("plugin", "ci")),)
    assert view.steering == ("hurry",)
    assert outbox_view(changes[-1]) == view  # the event carries what the view shows
    gate.gate.set()
    await handle
    assert agent.outbox.contexts == ()


async def test_request_model_returns_data(make_agent: MakeAgent) -> None:
    config = Config(models={"other": ModelEntry(provider="scripted")})
    agent = await make_agent([], config=config)
    change = agent.request_model("other")
    assert (change.model, change.grant_epoch, change.effective) == ("other", 2, "now")
    assert agent.model.next_name == "other"


# --- defects ------------------------------------------------------------------------------------------


class _Redact:
    async def __call__(self, submission: PromptSubmission, next: Next) -> PromptDecision:
        return Allow(submission.content.replace("hunter2", "[redacted]"))


async def test_the_title_comes_from_the_admitted_prompt(make_agent: MakeAgent) -> None:
    agent = await make_agent([Reply(text="ok")])
    agent.on_prompt(_Redact())
    await agent.send("secret=hunter2 please deploy")
    titles = of_type(list(agent.log), SessionTitle)
    assert [t.title for t in titles] == ["secret=[redacted] please deploy"]
    message = of_type(list(agent.log), UserMessage)[0]
    assert message.original_content == "secret=hunter2 please deploy"
    assert message.label is not None
    assert message.label.cls is PrivacyClass.restricted


async def test_a_long_prompt_makes_a_one_line_title(make_agent: MakeAgent) -> None:
    agent = await make_agent([Reply(text="ok")])
    await agent.send("x" * 5_000_000)
    (title,) = of_type(list(agent.log), SessionTitle)
    assert len(title.title) <= 120


async def test_tool_calls_floor_blocks_and_titles_carry_labels(make_agent: MakeAgent) -> None:
    agent = await make_agent(
        [Reply(tool_calls=[call("probe")]), Reply(text="ok")],
        tools=ToolRegistry([FixedTool("probe")]),
    )
    await agent.send("hi")
    for event in agent.log:
        if event.type in ("tool/call", "floor/block", "session/title"):
            assert event.data.label is not None, event.type  # type: ignore[attr-defined]
    (tool_call,) = of_type(list(agent.log), ToolCallRecord)
    assert tool_call.label is not None


async def test_front_end_errors_share_one_base(make_agent: MakeAgent) -> None:
    agent = await make_agent([])
    await agent.aclose()
    with pytest.raises(TrellisError, match="disposed"):
        agent.send("late")
    fresh = await make_agent([], stored=False)
    with pytest.raises(TrellisError, match="not stored"):
        await fresh.fork()


async def test_front_ends_never_need_the_engine_internals(make_agent: MakeAgent) -> None:
    agent = await make_agent([])
    for internal in ("session", "coop", "assembler", "runtime", "record", "append_user"):
        assert not hasattr(agent, internal), internal


def test_the_engine_imports_no_front_end() -> None:
    forbidden = ("app", "replay", "textual", "websockets")
    offenders: list[str] = []
    for path in sorted((REPO / "engine").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [
                f"{path.relative_to(REPO)}: {name}"
                for name in names
                if name.split(".")[0] in forbidden
            ]
    assert offenders == []


def test_the_agent_package_has_no_import_circle() -> None:
    """`agent` imports `turn` and `compactor`; they know only the runtime, never the Agent."""
    for module in ("turn", "compactor", "runtime", "views", "send"):
        text = (REPO / "engine" / "agent" / f"{module}.py").read_text(encoding="utf-8")
        assert "engine.agent.agent" not in text, module


async def test_a_held_admission_still_gives_the_handle_its_turn(make_agent: MakeAgent) -> None:
    held = HeldAdmission()
    agent = await make_agent([Reply(text="ok")])
    agent.on_prompt(held)
    handle = agent.send("hi")
    await held.deciding.wait()
    assert handle.state == "queued"
    held.release()
    assert await asyncio.wait_for(handle.turn(), 10) == 1
    await handle


async def test_an_event_from_the_log_is_placeable(make_agent: MakeAgent) -> None:
    agent = await make_agent([Reply(text="ok")])
    await agent.send("hi")
    await until(lambda: agent.unflushed == 0, "everything flushed")
    assert all(isinstance(e, Event) for e in agent.log)
    assert [e.seq for e in agent.log] == list(range(len(agent.log)))
