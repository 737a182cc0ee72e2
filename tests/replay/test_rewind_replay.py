"""A rewound session replayed (issue 30): the transcript keeps every turn and shows the rewind,
the timeline after it shows the rewound Context at every seq, `trellis show`, the exports and the
ACP load say so, and a fork after the rewind inherits it."""

from __future__ import annotations

import json

from app.transcript_text import PLAIN, transcript_text
from engine.context import ContextRebuilder
from engine.context.areas import PlanArea
from engine.events import Event, SessionRewind, TurnStart
from engine.gateway.scripted import Reply
from engine.privacy import PrivacyClass
from replay.acp import AcpProjection
from replay.export import export
from replay.timeline import Timeline
from replay.transcript import RewindEntry, TurnEntry, transcript_of
from tests.agent.conftest import FlakyStore, MakeAgent, runtime_of, stored_log
from tests.replay.live_scenarios import play


def rewinds(log: tuple[Event, ...]) -> list[Event]:
    return [e for e in log if type(e.data) is SessionRewind]


async def test_the_transcript_keeps_every_turn_and_shows_each_rewind(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("rewind", make_agent, store)
    entries = transcript_of(played.stored).entries
    assert [e.number for e in entries if isinstance(e, TurnEntry)] == [1, 2, 3, 4, 5, 6]
    shown = [e for e in entries if isinstance(e, RewindEntry)]
    assert [(e.to_turn, e.prompt, e.conversation, e.code) for e in shown] == [
        (2, "q2", True, False),
        (5, "q5", True, False),
    ]
    text = transcript_text(entries, PLAIN)
    assert "Rewound to turn 2 (conversation), before:\n  q2" in text
    # each where it happened: after turn 4, after turn 5
    assert text.index("q4") < text.index("Rewound to turn 2") < text.index("q5")
    assert text.index("q5") < text.index("Rewound to turn 5") < text.index("q6")


async def test_the_timeline_at_every_seq_is_a_replay_of_the_history_up_to_it(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("rewind", make_agent, store)
    log = played.stored
    gateway_type = played.agent.context.gateway_type
    config = runtime_of(played.agent).assembler.config
    timeline = Timeline.of(gateway_type, log, config=config, every=5)
    # seek backwards (checkpoints restored), then forwards
    for seq in [*reversed(range(len(log))), *range(len(log))]:
        expected = ContextRebuilder.of(gateway_type, log[: seq + 1])
        assert timeline.at(seq).context.entries() == expected.context.entries(), seq
    first, _ = rewinds(log)
    assert first.data.to_seq == next(  # type: ignore[attr-defined]
        e.seq for e in log if type(e.data) is TurnStart and e.data.turn == 2
    )
    # right after the first rewind: the Context as it was just before turn 2's prompt
    at_rewind = timeline.at(first.seq)
    before_turn_2 = timeline.at(first.data.to_seq - 1)  # type: ignore[attr-defined]
    assert at_rewind.context.entries() == before_turn_2.context.entries()
    assert at_rewind.areas == before_turn_2.areas == ()  # the plan came later: taken out
    assert at_rewind.pins == before_turn_2.pins
    assert timeline.snapshot().context.entries() == played.agent.context.entries()


async def test_show_exports_and_the_acp_load_name_the_rewind(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("rewind", make_agent, store)
    info = await store.info(played.agent.session_id)
    log = played.stored
    markdown = export(info, log, "md")
    assert "*Rewound to turn 2 (conversation), before:*" in markdown
    html = export(info, log, "html")
    assert "Rewound to turn 5 (conversation), before:" in html
    events = json.loads(export(info, log, "json"))["events"]
    assert [e["data"]["to_turn"] for e in events if e["type"] == "session/rewind"] == [2, 5]
    redacted = export(info, log, "md", max_class=PrivacyClass.public)
    assert "Rewound to turn 2 (conversation)" in redacted
    assert "> q2" not in redacted  # the prompt is the user's words: internal

    updates = list(AcpProjection(workspace="/ws").replay(played.stored))
    said = [
        u["content"]["text"]
        for u in updates
        if u["sessionUpdate"] == "agent_message_chunk" and "Rewound" in u["content"]["text"]
    ]
    assert said == [
        "Rewound to turn 2 (conversation); the session is as it was before:\n\n> q2\n",
        "Rewound to turn 5 (conversation); the session is as it was before:\n\n> q5\n",
    ]


async def test_the_acp_projection_gives_back_the_mode_and_plan_of_the_rewound_point(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="a1"), Reply(text="a2")])
    plan = PlanArea("Plan", ["read"])
    plan_id = agent.register_area(plan)
    await agent.set_mode("accept-edits")
    await agent.send("q1")
    plan.add("write")
    agent.area_changed(plan_id)
    await agent.set_mode("read-only")
    await agent.send("q2")
    await agent.rewind(2)
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    projection = AcpProjection(workspace="/ws")
    updates = list(projection.replay(log))
    after = updates[
        next(i for i, u in enumerate(updates) if "Rewound" in str(u.get("content", ""))) :
    ]
    kinds = [u["sessionUpdate"] for u in after]
    assert "current_mode_update" not in kinds  # turn 2 started in read-only: no change
    await agent.rewind(1)
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    tail = projection.apply(log[-1]) if type(log[-1].data) is SessionRewind else []
    assert {"sessionUpdate": "current_mode_update", "currentModeId": "accept-edits"} in tail
    assert {
        "sessionUpdate": "plan",
        "entries": [{"content": "read", "status": "pending", "priority": "medium"}],
    } in tail
    assert projection.mode == agent.mode == "accept-edits"


async def test_a_fork_after_a_rewind_inherits_it(make_agent: MakeAgent, store: FlakyStore) -> None:
    played = await play("rewind", make_agent, store)
    agent = played.agent
    live = agent.context.entries()
    fork_id = await agent.fork()
    forked_log = await stored_log(store, fork_id)
    assert [e.data for e in rewinds(forked_log)] == [e.data for e in rewinds(played.stored)]
    forked = await make_agent(session_id=fork_id)
    assert forked.context.entries() == live
