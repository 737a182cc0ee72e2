"""Prompt admission: the waterfall of listeners that runs before a turn opens.

spec: context-injection, "Extension and caller semantics" (docs/spec/context-injection.md,
"Admission").
"""

from __future__ import annotations

import asyncio

from engine.agent import Allow, PromptDecision, PromptSubmission, Reject
from engine.agent.admission import Next
from engine.events import AgentError, AgentQueued, TurnStart, UserMessage
from engine.gateway.scripted import Reply
from tests.agent.conftest import (
    FlakyStore,
    HeldAdmission,
    MakeAgent,
    context,
    of_type,
    record,
    requests_of,
    stored_log,
    turn_shape,
    user_texts,
)


async def test_allow_with_rewritten_content_and_contexts(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="ok")])

    async def expand(submission: PromptSubmission, next: Next) -> PromptDecision:
        return Allow(
            submission.content.replace("@readme", "README.md"),
            (context("README.md: a project", "mention", "README.md"), context("second", "rag")),
        )

    agent.on_prompt(expand)
    agent.send("summarize @readme")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[:5] == [
        "turn/start",
        "user/message:user:summarize README.md",
        "user/message:mention:README.md:README.md: a project",
        "user/message:rag:second",
        "step/start",
    ]
    prompt = of_type(log, UserMessage)[0]
    assert prompt.original_content == "summarize @readme"
    [first] = requests_of(agent)
    assert user_texts(first) == [
        ("user", "summarize README.md"),
        ("mention:README.md", "README.md: a project"),
        ("rag", "second"),
    ]


async def test_an_unchanged_prompt_has_no_original_content(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="ok")])

    async def same(submission: PromptSubmission, next: Next) -> PromptDecision:
        return Allow(submission.content, (context("extra"),))

    agent.on_prompt(same)
    agent.send("hello")
    await agent.when_idle()
    prompt = of_type(await stored_log(store, agent.session_id), UserMessage)[0]
    assert prompt.content == "hello"
    assert prompt.original_content is None


async def test_block_opens_no_turn_appends_nothing_and_keeps_earlier_context(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent()
    recorder = record(agent)
    agent.inject(context("injected before the prompt"))
    await agent.when_idle()
    before = await stored_log(store, agent.session_id)

    async def refuse(submission: PromptSubmission, next: Next) -> PromptDecision:
        return Reject("no secrets in prompts")

    agent.on_prompt(refuse)
    agent.send("my password is hunter2")
    await agent.when_idle()

    after = await stored_log(store, agent.session_id)
    assert after == before
    assert turn_shape(after)[-1] == "user/message:plugin:injected before the prompt"
    assert of_type(after, TurnStart) == []
    assert requests_of(agent) == []
    assert not any(t.startswith("turn/") for t in recorder.types())
    [error] = recorder.of(AgentError)
    assert error.turn is None
    assert "no secrets in prompts" in error.message
    assert agent.status == "idle"


async def test_a_throwing_listener_opens_no_turn_and_the_next_message_runs(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="second answer")])
    recorder = record(agent)
    seen: list[str] = []

    async def flaky(submission: PromptSubmission, next: Next) -> PromptDecision:
        seen.append(submission.content)
        if submission.content == "first":
            raise RuntimeError("listener broke")
        return await next()

    agent.on_prompt(flaky)
    agent.send("first")
    agent.send("second")
    await agent.when_idle()

    assert seen == ["first", "second"]
    log = await stored_log(store, agent.session_id)
    assert [e.turn for e in of_type(log, TurnStart)] == [1]
    assert [m.content for m in of_type(log, UserMessage)] == ["second"]
    [error] = recorder.of(AgentError)
    assert error.turn is None
    assert "listener broke" in error.message
    [request] = requests_of(agent)
    assert user_texts(request) == [("user", "second")]


async def test_a_listener_returning_something_else_is_a_failing_listener(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent()
    recorder = record(agent)

    async def wrong(submission: PromptSubmission, next: Next) -> PromptDecision:
        return "yes"  # type: ignore[return-value]

    agent.on_prompt(wrong)
    agent.send("hello")
    await agent.when_idle()
    assert of_type(await stored_log(store, agent.session_id), TurnStart) == []
    assert "not Allow or Reject" in recorder.of(AgentError)[0].message


async def test_a_pass_through_listener_keeps_downstream_content_and_contexts(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="ok")])
    order: list[str] = []

    async def outer(submission: PromptSubmission, next: Next) -> PromptDecision:
        order.append("outer")
        return await next()  # delegates: must not lose what downstream decided

    async def inner(submission: PromptSubmission, next: Next) -> PromptDecision:
        order.append("inner")
        return Allow("rewritten by inner", (context("from inner", "inner"),))

    agent.on_prompt(outer)
    agent.on_prompt(inner)
    agent.send("original")
    await agent.when_idle()

    assert order == ["outer", "inner"]
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[1:4] == [
        "user/message:user:rewritten by inner",
        "user/message:inner:from inner",
        "step/start",
    ]
    assert of_type(log, UserMessage)[0].original_content == "original"


async def test_an_enriching_listener_adds_after_downstream_contexts(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="ok")])

    async def outer(submission: PromptSubmission, next: Next) -> PromptDecision:
        decision = await next()
        if isinstance(decision, Reject):
            return decision
        return Allow(decision.content, (*decision.additional_contexts, context("outer", "outer")))

    async def inner(submission: PromptSubmission, next: Next) -> PromptDecision:
        return Allow(submission.content, (context("inner", "inner"),))

    agent.on_prompt(outer)
    agent.on_prompt(inner)
    agent.send("hi")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[1:4] == [
        "user/message:user:hi",
        "user/message:inner:inner",
        "user/message:outer:outer",
    ]


async def test_a_downstream_block_wins_through_a_pass_through_listener(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent()

    async def outer(submission: PromptSubmission, next: Next) -> PromptDecision:
        return await next()

    async def inner(submission: PromptSubmission, next: Next) -> PromptDecision:
        return Reject("inner says no")

    agent.on_prompt(outer)
    agent.on_prompt(inner)
    agent.send("hi")
    await agent.when_idle()
    assert of_type(await stored_log(store, agent.session_id), TurnStart) == []


async def test_an_unsubscribed_listener_is_not_called(make_agent: MakeAgent) -> None:
    agent = await make_agent([Reply(text="ok")])

    async def refuse(submission: PromptSubmission, next: Next) -> PromptDecision:
        return Reject("no")

    remove = agent.on_prompt(refuse)
    remove()
    agent.send("hi")
    await agent.when_idle()
    assert len(requests_of(agent)) == 1


async def test_two_sends_in_one_tick_make_two_turns(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="answer a"), Reply(text="answer b")])
    recorder = record(agent)
    agent.send("a")
    agent.send("b")
    await agent.when_idle()

    log = await stored_log(store, agent.session_id)
    assert [e.turn for e in of_type(log, TurnStart)] == [1, 2]
    assert turn_shape(log) == [
        "turn/start",
        "user/message:user:a",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
        "turn/start",
        "user/message:user:b",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    first, second = requests_of(agent)
    assert user_texts(first) == [("user", "a")]
    assert user_texts(second) == [("user", "a"), ("user", "b")]
    assert [q.messages for q in recorder.of(AgentQueued)] == [("a",), ("a", "b"), ("b",), ()]


async def test_admission_waits_are_not_turns(make_agent: MakeAgent, store: FlakyStore) -> None:
    # a slow listener: while it decides, no turn is open and an inject lands before the prompt
    agent = await make_agent([Reply(text="ok")])
    held = HeldAdmission()
    agent.on_prompt(held)
    agent.send("hi")
    await held.deciding.wait()
    assert not agent.turn_open
    assert agent.status == "running"
    agent.inject(context("while admitting"))
    held.release()
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert turn_shape(log)[:3] == [
        "user/message:plugin:while admitting",
        "turn/start",
        "user/message:user:hi",
    ]


async def test_aclose_during_admission_opens_no_turn(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="must not be asked")])
    held = HeldAdmission()
    agent.on_prompt(held)
    agent.send("hi")
    await held.deciding.wait()
    disposing = asyncio.create_task(agent.aclose())
    await asyncio.sleep(0)
    held.release()
    await disposing

    assert of_type(await stored_log(store, agent.session_id), TurnStart) == []
    assert requests_of(agent) == []
