"""What a turn changed in the workspace, in every reader (issue 30, "Replay and exports"): the
transcript carries each turn's changes and each command's files, `trellis show` lists them and
says when checkpoints were off, Markdown and HTML show the diffs (folded when long), JSON holds
the records, and `--max-class` hides a diff by its file's class."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from app.transcript_text import PLAIN, transcript_text
from engine.config import CheckpointsConfig, Config
from engine.events import Event, ToolChanges, TurnChanges, WorkspaceFileChange
from engine.gateway.scripted import Reply
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.tools import default_registry
from replay.entries import CheckpointsOffEntry, RewindEntry, ToolEntry, TurnEntry
from replay.export import export
from replay.export.as_markdown import DIFF_LINES
from replay.file_diff import file_diff
from replay.redaction import redact
from replay.transcript import transcript_of
from tests.agent.conftest import FlakyStore, MakeAgent, call
from tests.replay.scenarios import CHANGING, SCENARIOS


async def _stored(make_agent: MakeAgent, store: FlakyStore) -> tuple[str, list[Event]]:
    agent = await SCENARIOS["workspace_changes"](make_agent)
    return agent.session_id, list((await store.inspect(agent.session_id)).events)


def _paths(files: tuple[WorkspaceFileChange, ...]) -> dict[str, str]:
    return {f.path: f.status for f in files}


async def test_the_transcript_carries_each_turns_and_each_commands_changes(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    _, events = await _stored(make_agent, store)
    entries = transcript_of(events).entries
    turns = {e.number: e for e in entries if isinstance(e, TurnEntry)}
    first, second, last = turns[1].changes, turns[2].changes, turns[3].changes
    assert first is not None
    assert second is not None
    assert _paths(first.files) == {
        "made.txt": "added",
        "keep.txt": "modified",
        "gone.txt": "deleted",
    }
    assert _paths(second.files) == {"made.txt": "modified", "w.txt": "added"}
    assert last is None  # a turn with no call that could change the workspace
    tools = {e.call_id: e for e in entries if isinstance(e, ToolEntry)}
    assert _paths(tools["s1"].files) == _paths(first.files)
    # the batch's write_file shows its own record; the command beside it gets the rest
    assert _paths(tools["s2"].files) == {"made.txt": "modified"}
    assert tools["w1"].files == ()
    assert tools["w1"].change is not None
    keep = next(f for f in tools["s1"].files if f.path == "keep.txt")
    assert keep.diff is not None
    assert "-two" in keep.diff
    assert "+2" in keep.diff
    (rewind,) = [e for e in entries if isinstance(e, RewindEntry)]
    assert (rewind.conversation, rewind.code) == (False, True)
    assert rewind.restored == ("made.txt",)
    assert rewind.deleted == ("w.txt",)


async def test_show_lists_the_files_per_turn_and_what_a_rewind_did(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    _, events = await _stored(make_agent, store)
    text = transcript_text(transcript_of(events).entries, PLAIN)
    turn1 = text[text.index("Turn 1") : text.index("User", text.index("Turn 1"))]
    assert "3 files +2 -2:" in turn1
    assert "    created made.txt (+1 -0)" in turn1
    assert "    changed keep.txt (+1 -1)" in turn1
    assert "    removed gone.txt (+0 -1)" in turn1
    assert "restored: made.txt" in text
    assert "removed: w.txt" in text


async def test_show_says_when_checkpoints_were_off_and_why(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent(
        [Reply(tool_calls=[call("run_shell", "s1", command="echo a > a.txt")]), Reply("ok")],
        tools=default_registry(),
        responder=CHANGING,
        config=Config(checkpoints=CheckpointsConfig(enabled=False)),
    )
    await agent.send("go")
    events = (await store.inspect(agent.session_id)).events
    entries = transcript_of(events).entries
    (off,) = [e for e in entries if isinstance(e, CheckpointsOffEntry)]
    text = transcript_text(entries, PLAIN)
    assert (
        f"Checkpoints off from here on, so no changes to the files are recorded: {off.reason}"
        in text
    )
    assert "[checkpoints] enabled" in off.reason


async def test_markdown_and_html_show_the_diffs_and_json_the_records(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    session_id, events = await _stored(make_agent, store)
    info = await store.info(session_id)
    markdown = export(info, events, "md")
    assert "*Changed keep.txt (+1 -1):*" in markdown
    assert "```diff\n" in markdown
    assert "\n-two\n+2" in markdown
    assert "- created made.txt (+1 -0)" in markdown  # the turn's list
    assert "- removed: w.txt" in markdown
    html = export(info, events, "html")
    assert "Changed keep.txt (+1 -1)" in html
    assert "-two\n+2" in html
    exported = json.loads(export(info, events, "json"))
    kinds = [e["type"] for e in exported["events"]]
    assert kinds.count("turn/changes") == 2
    assert kinds.count("tool/changes") == 2
    record = next(e for e in exported["events"] if e["type"] == "turn/changes")
    assert {f["path"] for f in record["data"]["files"]} == {"made.txt", "keep.txt", "gone.txt"}


async def test_a_long_diff_is_folded(
    make_agent: MakeAgent, store: FlakyStore, tmp_path: Path
) -> None:
    agent = await make_agent(
        [Reply(tool_calls=[call("run_shell", "s1", command="seq 1 300 > long.txt")]), Reply("ok")],
        tools=default_registry(),
        responder=CHANGING,
    )
    await agent.send("go")
    events = (await store.inspect(agent.session_id)).events
    info = await store.info(agent.session_id)
    markdown = export(info, events, "md")
    assert f"*The diff is cut at {DIFF_LINES} lines: the JSON export holds all of it.*" in markdown
    assert "\n+250\n" not in markdown
    assert "more lines\n```" in markdown
    html = export(info, events, "html")
    assert "<details><summary>Created long.txt (+300 -0): " in html
    assert "\n+250\n" in html  # folded, not cut


async def test_max_class_hides_the_diffs_above_it_in_every_format(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    session_id, events = await _stored(make_agent, store)
    info = await store.info(session_id)
    for fmt in ("md", "html", "json"):
        shown = export(info, events, fmt, max_class=PrivacyClass.internal)
        assert "+2" in shown
        assert "-two" in shown
        hidden = export(info, events, fmt, max_class=PrivacyClass.public)
        assert "-two" not in hidden, fmt
        assert "[redacted: internal]" in hidden
        assert "keep.txt" in hidden  # the path and the counts stay
    exported = json.loads(export(info, events, "json", max_class=PrivacyClass.public))
    changes = [e for e in exported["events"] if e["type"] == "turn/changes"]
    assert all(e["redacted"] == "internal" for e in changes)


def test_a_restricted_files_diff_is_hidden_beside_a_shown_one() -> None:
    def changed(path: str, cls: PrivacyClass) -> WorkspaceFileChange:
        return WorkspaceFileChange(
            path=path,
            status="modified",
            diff=f"--- a/{path}\n+++ b/{path}\n-old {path}\n+new {path}",
            label=PrivatizationLabel.of(cls, path),
        )

    files = (
        changed("open.txt", PrivacyClass.internal),
        changed("vault.txt", PrivacyClass.restricted),
    )
    for payload in (
        TurnChanges(turn=1, before="a", after="b", files=files),
        ToolChanges(turn=1, step=1, call_ids=("c",), before="a", after="b", files=files),
    ):
        event = Event(seq=3, time=0.0, type=payload.event_type, data=payload)
        data = redact(event, PrivacyClass.internal).data
        assert isinstance(data, TurnChanges | ToolChanges)
        assert [f.diff for f in data.files] == [files[0].diff, "[redacted: restricted]"]
        assert [f.path for f in data.files] == ["open.txt", "vault.txt"]
        assert redact(event, PrivacyClass.restricted) == event


def test_a_change_without_a_diff_says_why_in_a_checkpoints_words() -> None:
    """A checkpoint keeps line counts for a diff over its cap and hashes for a binary file: the
    note says so (not a file tool's `only its hash`, which would be wrong here)."""

    def withheld(reason: Literal["size", "binary", "secret"]) -> str:
        change = WorkspaceFileChange(path="a.bin", status="modified", withheld=reason)
        return file_diff(change)

    assert withheld("size") == (
        "(the diff is too large to keep in the log: only the line counts are recorded)"
    )
    assert withheld("binary") == "(a binary file: only its hashes are recorded)"
    assert "secret pattern" in withheld("secret")
    assert file_diff(WorkspaceFileChange(path="a", status="added", diff="+x\n")) == "+x\n"
