"""Errors a turn or its admission reports never carry a secret the session holds (issue 9): the
text of any exception, not only a gateway's, goes through the session's redactor before it
reaches `turn/end` or `agent/error`."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.agent import PromptDecision, PromptSubmission
from engine.agent.admission import Next
from engine.config import AreaEntry, Config, ModelEntry
from engine.events import AgentError, LiveEvent, TurnEnd
from engine.gateway.scripted import Reply
from engine.message import Message
from engine.redaction import REDACTED
from tests.agent.harness import opened, payloads
from tests.agent.test_areas_in_loop import Banner

KEY_ENV = "REDACTED_ERRORS_KEY"
KEY = "sk-held-7c1e94b2a05d"

HOLDS_A_KEY = Config(
    areas=[AreaEntry(path=f"{__name__}:Leaking", args={"text": "x"})],
    models={
        "scripted": ModelEntry(provider="scripted"),
        "remote": ModelEntry(
            provider="openai", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_ENV
        ),
    },
)


class Leaking(Banner):
    """An Area whose failure quotes the key (as a library's error may quote its settings)."""

    def render(self) -> list[Message]:
        raise RuntimeError(f"connection refused for api_key={KEY}")


async def test_a_failing_turn_reports_no_held_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    async with opened(tmp_path, [Reply(text="never")], config=HOLDS_A_KEY) as run:
        errors: list[str] = []

        def collect(event: object) -> None:
            if isinstance(event, LiveEvent) and isinstance(event.data, AgentError):
                errors.append(event.data.message)

        run.agent.subscribe(collect)
        await run.run("hello")
        events = await run.events()
    (end,) = payloads(events, TurnEnd)
    assert end.reason == "error"
    assert f"api_key={REDACTED}" in end.message
    assert [f"api_key={REDACTED}" in e for e in errors] == [True]
    assert KEY not in end.message + "".join(errors)


async def test_a_failing_prompt_listener_reports_no_held_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    config = HOLDS_A_KEY.model_copy(update={"areas": []})
    async with opened(tmp_path, config=config) as run:

        async def failing(submission: PromptSubmission, next: Next) -> PromptDecision:
            raise ValueError(f"policy server rejected token {KEY}")

        run.agent.on_prompt(failing)
        handle = run.agent.send("hello")
        outcome = await handle
    assert f"token {REDACTED}" in str(outcome)
    assert KEY not in str(outcome)
