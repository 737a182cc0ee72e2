"""`Transcript.apply` one event at a time: what a UI is told, and how live state gives way to the
durable entry in the same place."""

from __future__ import annotations

from engine.events import (
    AssistantDelta,
    AssistantMessage,
    AssistantReset,
    Attachment,
    Event,
    LiveEvent,
    Payload,
    PermissionDecision,
    PermissionRequest,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolOutputDelta,
    ToolPending,
    ToolResultRecord,
    TurnStart,
    UserMessage,
    make_event,
    make_live_event,
)
from engine.message import ToolCall
from replay.transcript import AssistantEntry, Change, ToolEntry, UserEntry, transcript_of


class Feed:
    """Builds a session's events in order: durable ones numbered, live ones placed after them."""

    def __init__(self) -> None:
        self.events: list[Event | LiveEvent] = []
        self.seq = -1

    def durable(self, payload: Payload) -> Event:
        self.seq += 1
        event = make_event(payload, self.seq, 100.0 + self.seq)
        self.events.append(event)
        return event

    def live(self, payload: Payload) -> LiveEvent:
        event = make_live_event(payload, 100.0 + self.seq, self.seq)
        self.events.append(event)
        return event

    def stored(self) -> list[Event]:
        return [e for e in self.events if isinstance(e, Event)]


def started() -> Feed:
    feed = Feed()
    feed.durable(TurnStart(turn=1))
    feed.durable(UserMessage(content="go"))
    feed.durable(StepStart(turn=1, step=1))
    return feed


def test_streamed_text_is_replaced_in_place_by_the_reply() -> None:
    feed = started()
    transcript = transcript_of(feed.events)
    assert transcript.apply(feed.live(AssistantDelta(turn=1, step=1, text="he"))) == Change(
        added=("assistant:1.1",)
    )
    assert transcript.apply(feed.live(AssistantDelta(turn=1, step=1, text="llo"))) == Change(
        updated=("assistant:1.1",)
    )
    streaming = transcript.get("assistant:1.1")
    assert isinstance(streaming, AssistantEntry)
    assert (streaming.content, streaming.streaming) == ("hello", True)
    reply = feed.durable(AssistantMessage(turn=1, step=1, content="hello", model="m"))
    assert transcript.apply(reply) == Change(updated=("assistant:1.1",))
    assert transcript.entries == transcript_of(feed.stored()).entries


def test_a_reset_withdraws_what_the_failed_attempt_streamed() -> None:
    feed = started()
    transcript = transcript_of(feed.events)
    transcript.apply(feed.live(AssistantDelta(turn=1, step=1, text="half")))
    change = transcript.apply(feed.live(AssistantReset(turn=1, step=1)))
    assert change == Change(removed=("assistant:1.1",))
    assert transcript.get("assistant:1.1") is None


def test_tool_cards_announced_before_text_end_after_the_reply_as_in_the_log() -> None:
    feed = started()
    transcript = transcript_of(feed.events)
    first = transcript.apply(feed.live(ToolPending(turn=1, step=1, index=0, name="ls")))
    assert first == Change(added=("tool:1.1#0",))
    # the id arrives later: the card changes key where it stands
    named = transcript.apply(
        feed.live(ToolPending(turn=1, step=1, index=0, call_id="c1", name="ls", arguments="{"))
    )
    assert named == Change(added=("tool:1.1.c1",), removed=("tool:1.1#0",))
    transcript.apply(feed.live(AssistantDelta(turn=1, step=1, text="listing")))
    assert [e.key for e in transcript.entries][-2:] == ["assistant:1.1", "tool:1.1.c1"]
    feed.durable(
        AssistantMessage(
            turn=1,
            step=1,
            content="listing",
            tool_calls=(ToolCall("c1", "ls"),),
            finish="tool_calls",
        )
    )
    feed.durable(ToolCallRecord(turn=1, step=1, call_id="c1", name="ls"))
    for event in feed.events[-2:]:
        transcript.apply(event)
    tool = transcript.get("tool:1.1.c1")
    assert isinstance(tool, ToolEntry)
    assert tool.status == "running"
    assert transcript.entries == transcript_of(feed.stored()).entries


def test_live_output_and_a_permission_question_give_way_to_the_result() -> None:
    feed = started()
    feed.durable(AssistantMessage(turn=1, step=1, tool_calls=(ToolCall("c1", "sh"),)))
    feed.durable(ToolCallRecord(turn=1, step=1, call_id="c1", name="sh"))
    transcript = transcript_of(feed.events)
    transcript.apply(feed.live(PermissionRequest(turn=1, step=1, call_id="c1", tool="sh")))
    assert transcript.get("tool:1.1.c1") == ToolEntry(
        key="tool:1.1.c1",
        seq=4,
        turn=1,
        step=1,
        call_id="c1",
        name="sh",
        arguments={},
        status="running",
        asking=True,
    )
    transcript.apply(feed.durable(PermissionDecision(call_id="c1", decision="allow")))
    for line in ("line 1\n", "line 2\n"):
        transcript.apply(feed.live(ToolOutputDelta(turn=1, step=1, call_id="c1", text=line)))
    running = transcript.get("tool:1.1.c1")
    assert isinstance(running, ToolEntry)
    assert (running.output, running.asking, running.permission) == (
        "line 1\nline 2\n",
        False,
        "allow",
    )
    transcript.apply(
        feed.durable(ToolResultRecord(turn=1, step=1, call_id="c1", content="2 lines"))
    )
    transcript.apply(feed.durable(StepEnd(turn=1, step=1)))
    done = transcript.get("tool:1.1.c1")
    assert isinstance(done, ToolEntry)
    assert (done.status, done.output, done.result) == ("done", "", "2 lines")
    assert transcript.entries == transcript_of(feed.stored()).entries


def test_a_step_that_ends_without_a_reply_drops_its_live_cards() -> None:
    feed = started()
    transcript = transcript_of(feed.events)
    transcript.apply(feed.live(ToolPending(turn=1, step=1, index=0, call_id="c1", name="ls")))
    change = transcript.apply(feed.durable(StepEnd(turn=1, step=1)))
    assert change.removed == ("tool:1.1.c1",)
    assert transcript.entries == transcript_of(feed.stored()).entries


def test_durable_events_delivered_again_change_nothing() -> None:
    feed = started()
    transcript = transcript_of(feed.events)
    before = transcript.entries
    for event in feed.stored():
        assert not transcript.apply(event)
    assert transcript.entries == before
    assert transcript.last_seq == 2


def test_a_rewritten_prompt_keeps_what_the_user_typed_and_its_attachments() -> None:
    feed = Feed()
    feed.durable(
        UserMessage(
            content="deploy [redacted]",
            original_content="deploy hunter2",
            attachments=(Attachment(name="notes.txt", text="remember"),),
        )
    )
    (user,) = transcript_of(feed.events).entries
    assert isinstance(user, UserEntry)
    assert (user.content, user.original) == ("deploy [redacted]", "deploy hunter2")
    assert [a.name for a in user.attachments] == ["notes.txt"]


def test_index_says_where_an_added_entry_stands() -> None:
    feed = started()
    transcript = transcript_of(feed.events)
    transcript.apply(feed.live(ToolPending(turn=1, step=1, index=0, call_id="c1", name="ls")))
    (added,) = transcript.apply(feed.live(AssistantDelta(turn=1, step=1, text="hi"))).added
    assert transcript.index(added) == transcript.index("tool:1.1.c1") - 1
    assert [e.key for e in transcript.entries].index(added) == transcript.index(added)
