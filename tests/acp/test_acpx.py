"""Trellis through acpx, the headless ACP client of other authors: it starts `trellis acp` as its
agent and prints, with `--format json`, every JSON-RPC message both ways (its session commands
print one line saying what they did).

acpx keeps a session's agent running in a queue owner process between its commands (for `--ttl`
seconds); each test closes its sessions so that none outlives it. To open a session kept by
another client, acpx sends `session/resume` when the agent offers it, as Trellis does, and
`session/load` only otherwise (acpx 0.19.1, `dist/queue-owner-runtime-*.js`,
`loadOrCreateRuntimeSession` and `resumeSessionRecordWithClient`): the replay of a load is the
TypeScript SDK's to check (`test_node_clients.py`); here the resumed session keeps its plan and
its mode.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.acp.node_peers import Place, acpx_run

pytestmark = pytest.mark.slow

TTL = "30"
"""Seconds acpx keeps an idle queue owner (and its `trellis acp`): a bound if a close fails."""


@dataclass(slots=True)
class Acpx:
    """acpx against one `trellis acp` command line, its own records under `state`."""

    place: Place
    agent_args: list[str]
    state: Path
    opened: bool = field(default=False)

    def run(self, *args: str) -> list[dict[str, Any]]:
        """Every JSON line acpx printed; fails if acpx did."""
        done = acpx_run(
            self.place, "--ttl", TTL, *args, agent_args=self.agent_args, state=self.state
        )
        assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    def open(self, *args: str) -> list[dict[str, Any]]:
        self.opened = True
        return self.run("sessions", "new", *args)

    def close(self) -> None:
        if self.opened:
            self.run("sessions", "close")
            self.opened = False


@pytest.fixture
def place(tmp_path: Path) -> Place:
    return Place.under(tmp_path)


@pytest.fixture
def clients(place: Place) -> Iterator[list[Acpx]]:
    """The acpx clients a test makes; their sessions closed when it ends."""
    made: list[Acpx] = []
    yield made
    for client in made:
        client.close()


def updates(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == kind
    ]


def asked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("method") == "session/request_permission"]


def stop_reasons(messages: list[dict[str, Any]]) -> list[str]:
    """The stop reason of each prompt's answer. acpx prints both directions, and ids of each
    side's requests may meet: a prompt's answer is the result with a stop reason."""
    prompt_ids = {m["id"] for m in messages if m.get("method") == "session/prompt"}
    return [
        m["result"]["stopReason"]
        for m in messages
        if m.get("id") in prompt_ids and "stopReason" in (m.get("result") or {})
    ]


def completed_diffs(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    done = [u for u in updates(messages, "tool_call_update") if u.get("status") == "completed"]
    return [c for u in done for c in u.get("content") or [] if c["type"] == "diff"]


def test_acpx_runs_a_prompt_with_every_permission_approved(place: Place) -> None:
    replies = place.script(
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "by-acpx.txt", "content": "x\n"}}
                ]
            },
            {"text": "Wrote by-acpx.txt."},
        ]
    )
    done = acpx_run(place, "--approve-all", "exec", "write the file", agent_args=replies)
    assert done.returncode == 0, done.stderr[-3000:]
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    # write_file reads the file it replaces first
    assert stop_reasons(messages) == ["end_turn"]
    assert (place.workspace / "by-acpx.txt").read_text(encoding="utf-8") == "x\n"
    assert asked(messages)


def test_acpx_shows_plans_diffs_and_modes_and_a_resumed_session_keeps_them(
    place: Place, clients: list[Acpx], tmp_path: Path
) -> None:
    """A session of acpx's: `/plan add` sends a plan; acpx's `set-mode` (`session/set_mode`) to
    accept-edits lets a new file and an edit run unasked, each with its diff (`oldText` null, then
    the old text); its `set` of the config option `mode` to read-only refuses a write unasked
    (acpx approves whatever it is asked: `--approve-all`). Another acpx, with records of its own,
    resumes the stored session in a new `trellis acp`: read-only, and the plan is there."""
    replies = place.script(
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.txt", "content": "one\n"}}
                ]
            },
            {"text": "Wrote."},
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "arguments": {"path": "a.txt", "old": "one", "new": "two"},
                    }
                ]
            },
            {"text": "Edited."},
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "b.txt", "content": "no\n"}}
                ]
            },
            {"text": "Refused."},
        ]
    )
    first = Acpx(place, replies, state=tmp_path / "first")
    clients.append(first)
    first.open()

    planned = first.run("--approve-all", "prompt", "/plan add buy bread")
    assert stop_reasons(planned) == ["end_turn"]
    plan = [(e["content"], e["status"]) for u in updates(planned, "plan") for e in u["entries"]]
    assert plan == [("buy bread", "pending")]
    (session_id,) = {
        m["params"]["sessionId"] for m in planned if m.get("method") == "session/update"
    }

    (mode_set,) = first.run("set-mode", "accept-edits")
    assert (mode_set["action"], mode_set["modeId"]) == ("mode_set", "accept-edits")
    path = str(place.workspace / "a.txt")
    written = first.run("--approve-all", "prompt", "write a.txt")
    assert stop_reasons(written) == ["end_turn"]
    assert not asked(written)
    assert completed_diffs(written) == [
        {"type": "diff", "path": path, "oldText": None, "newText": "one\n"}
    ]
    edited = first.run("--approve-all", "prompt", "edit a.txt")
    assert stop_reasons(edited) == ["end_turn"]
    assert not asked(edited)
    assert completed_diffs(edited) == [
        {"type": "diff", "path": path, "oldText": "one\n", "newText": "two\n"}
    ]
    assert (place.workspace / "a.txt").read_text(encoding="utf-8") == "two\n"

    (config_set,) = first.run("set", "mode", "read-only")
    assert config_set["action"] == "config_set"
    (mode,) = [o for o in config_set["configOptions"] if o["id"] == "mode"]
    assert mode["currentValue"] == "read-only"
    refused = first.run("--approve-all", "prompt", "write b.txt")
    assert stop_reasons(refused) == ["end_turn"]
    assert not asked(refused)
    assert [u["status"] for u in updates(refused, "tool_call_update") if "status" in u] == [
        "failed"
    ]
    assert not (place.workspace / "b.txt").exists()
    first.close()

    second = Acpx(place, replies, state=tmp_path / "second")
    clients.append(second)
    second.open("--resume-session", session_id)
    shown = second.run("--approve-all", "prompt", "/plan")
    (resume,) = [m for m in shown if m.get("method") == "session/resume"]
    assert resume["params"]["sessionId"] == session_id
    assert [u["currentModeId"] for u in updates(shown, "current_mode_update")] == ["read-only"]
    assert stop_reasons(shown) == ["end_turn"]
    said = "".join(u["content"]["text"] for u in updates(shown, "agent_message_chunk"))
    assert "buy bread" in said
