"""Where context came from, as the egress gate reads it: a tool result is sourced `tool:<name>`
(so a refusal names the tool and `run_shell` output takes the configured shell class), and
injected context carries the class its producer declares (docs/spec/context-orchestration.md,
privacy)."""

from __future__ import annotations

from pathlib import Path

from engine.agent import open_agent
from engine.config import ContextConfig
from engine.events import TurnEnd, UserMessage
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import AdditionalContext, Source, ToolCall
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.store.sqlite.store import SQLiteStore
from engine.tools.permission import HeadlessPolicy
from tests.agent.harness import opened, payloads
from tests.agent.test_orchestration import REMOTE


async def test_shell_output_takes_the_configured_shell_class_on_resume(tmp_path: Path) -> None:
    """The shell class is applied by provenance, not only when the output was labelled: a session
    resumed with a stricter `shell_class` treats its earlier `run_shell` output by that class."""
    script = [
        Reply(tool_calls=[ToolCall("c1", "run_shell", {"command": "echo shell-said-this"})]),
        Reply(text="ran it"),
    ]
    allow_shell = HeadlessPolicy(allow=frozenset({"run_shell"}))
    async with opened(tmp_path, script, responder=allow_shell) as run:
        await run.run("run it")
        session_id = run.agent.session_id
        first = await run.events()
    assert [e.reason for e in payloads(first, TurnEnd)] == ["completed"]

    strict = REMOTE.model_copy(update={"context": ContextConfig(shell_class="restricted")})
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=strict,
            cwd=tmp_path / "workspace",
            store=store,
            session_id=session_id,
            model="remote",
            gateway=ScriptedGateway([Reply(text="never sent")], strict=True),
        )
        try:
            agent.send("and now?")
            await agent.when_idle()
            events = (await store.inspect(session_id)).events
        finally:
            await agent.aclose()
    end = payloads(events, TurnEnd)[-1]
    assert end.reason == "egress"
    assert "tool result of run_shell" in end.message
    assert "is restricted" in end.message


async def test_injected_context_carries_the_class_its_producer_declares(tmp_path: Path) -> None:
    secret = PrivatizationLabel(cls=PrivacyClass.restricted, categories=frozenset({"ticket"}))
    async with opened(tmp_path, [Reply(text="never sent")], config=REMOTE) as run:
        run.agent.inject(AdditionalContext("customer ticket 4711", Source("crm"), label=secret))
        await run.run("summarize the ticket")
        events = await run.events()
        sent = len(run.gateway.requests)
    injected = next(m for m in payloads(events, UserMessage) if m.source == Source("crm"))
    assert injected.label is not None
    assert injected.label.cls is PrivacyClass.restricted
    assert injected.label.categories == frozenset({"ticket"})
    assert "crm" in injected.label.parents  # the producer stays its parent
    assert sent == 0
    (end,) = payloads(events, TurnEnd)
    assert end.reason == "egress"
    assert "injected context from crm" in end.message


async def test_injected_context_may_declare_a_lower_class(tmp_path: Path) -> None:
    """The declared class is taken as it is: public material stays public (default internal)."""
    public = PrivatizationLabel(cls=PrivacyClass.public)
    async with opened(tmp_path, [Reply(text="ok")]) as run:
        run.agent.inject(AdditionalContext("the docs site is up", Source("status"), label=public))
        run.agent.inject(AdditionalContext("no label given", Source("status")))
        await run.agent.when_idle()
        events = await run.events()
    declared, default = [m.label for m in payloads(events, UserMessage)]
    assert declared is not None
    assert declared.cls is PrivacyClass.public
    assert default is not None
    assert default.cls is PrivacyClass.internal
