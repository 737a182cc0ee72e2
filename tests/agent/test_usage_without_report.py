"""A failed or cancelled step reports no tokens; its estimate must not jump away from the steps
around it that did (it was characters / 3 while the provider counted about 4 a token)."""

from __future__ import annotations

import asyncio
import itertools

from engine.context.usage import UsageTally
from engine.events import TurnEnd
from engine.gateway.scripted import Reply
from replay.acp import replay_updates
from tests.agent.conftest import FlakyStore, MakeAgent, of_type, stored_log


async def test_a_failed_and_a_cancelled_turn_are_estimated_at_the_reported_rate(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent(
        [
            Reply(text="hello there " * 20),
            Reply(text="partial", error="the model failed"),
            Reply(text="slow " * 50, chunk_delay=0.05),
            Reply(text="again " * 20),
        ]
    )
    for prompt in ("first question " * 10, "second", "third", "fourth"):
        agent.send(prompt)
        if prompt == "third":
            await asyncio.sleep(0.3)
            agent.cancel()
        await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    ends = [end.reason for end in of_type(log, TurnEnd)]
    assert ends == ["completed", "error", "cancelled", "completed"]

    updates = [u for u in replay_updates(log, "/ws") if u["sessionUpdate"] == "usage_update"]
    used = [u["used"] for u in updates]
    estimated = [u["_meta"]["trellis/usage"]["estimated"] for u in updates]
    assert estimated == [False, True, True, False]
    # each step adds a prompt and a short reply to the one before: none moves the figure by a
    # sixth, and no estimate passes the next report by more than a few percent (characters / 3 made
    # it 223 -> 342 -> 379 -> 267)
    for before, after in itertools.pairwise(used):
        assert abs(after - before) < before / 6, used
    # an estimate at the reported rate may pass the next report by a few percent, not more
    assert max(used[1:3]) <= used[3] * 1.05, used

    tally = UsageTally()
    totals = []
    for event in log:
        if tally.take(event.data) and event.type == "step/end":
            current = tally.current()
            assert current is not None
            totals.append(current.used)
    assert totals == used

    agent.send("fifth")  # the script is spent: this turn fails too, and /context says so
    await agent.when_idle()
    last = await agent.last_request()
    assert last is not None
    assert last[1].estimated
    assert used[3] <= last[1].used < used[3] * 1.2, (used, last[1].used)
