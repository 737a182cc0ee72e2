"""Sessions as OpenTelemetry GenAI traces, checked against a loopback collector that decodes the
OTLP protobuf: live from `trellis run` with `[telemetry] otlp_endpoint`, and from the store with
`trellis export --format otlp`. Both come from one projection, so they send the same spans."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app import cli
from engine.config import Config, TelemetryConfig, load_config
from engine.events import (
    AssistantMessage,
    Event,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
)
from engine.privacy import PrivacyClass
from engine.store.sqlite.store import SQLiteStore
from tests.agent.harness import trellis_env
from tests.otlp_collector import Collector, ReceivedSpan, collector

CONTENT_ATTRIBUTES = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}

TOOL_TURN: list[dict[str, object]] = [
    {
        "text": "Looking. ",
        "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
        "usage": {
            "input_tokens": 10,
            "cache_read_tokens": 90,
            "cache_write_tokens": 5,
            "output_tokens": 7,
        },
    },
    {"text": "It says to buy milk.", "usage": {"input_tokens": 20, "output_tokens": 3}},
]
"""A turn of two model calls with a tool call between them; the first reads from the cache."""


@dataclass(frozen=True, slots=True)
class Run:
    capsys: pytest.CaptureFixture[str]
    tmp_path: Path
    workspace: Path
    config: Path

    def configure(self, text: str) -> None:
        self.config.write_text(text)

    def main(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = cli.main(list(args))
        out, err = self.capsys.readouterr()
        return code, out, err

    def turn(self, replies: list[dict[str, object]] = TOOL_TURN) -> str:
        """One scripted turn run headless; the session's id."""
        script = self.tmp_path / "script.json"
        script.write_text(json.dumps({"replies": replies}))
        code, _, err = self.main("run", "-p", "what do my notes say?", "--script", str(script))
        assert code == 0, err
        return session_of(err)

    def events(self, session_id: str) -> tuple[Event, ...]:
        async def read() -> tuple[Event, ...]:
            async with SQLiteStore(self.tmp_path / "home" / "sessions.sqlite") as store:
                return (await store.inspect(session_id)).events

        return asyncio.run(read())


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("buy milk\n")
    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("TRELLIS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRELLIS_CONFIG", str(config))
    monkeypatch.chdir(workspace)
    return Run(capsys, tmp_path, workspace, config)


@pytest.fixture
def otlp() -> Iterator[Collector]:
    with collector() as received:
        yield received


def telemetry(url: str, *lines: str) -> str:
    return "\n".join(["[telemetry]", f'otlp_endpoint = "{url}"', *lines]) + "\n"


def by_name(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    named: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        named.setdefault(span.name.split()[0], []).append(span)
    return named


def ns(seconds: float) -> int:
    return round(seconds * 1_000_000_000)


def test_a_live_turn_is_a_trace_of_its_model_calls_and_tool_calls(
    run: Run, otlp: Collector
) -> None:
    run.configure(telemetry(otlp.url))
    session_id = run.turn()
    spans = otlp.wait_for(4)
    assert otlp.paths == ["/v1/traces"] * len(otlp.paths)
    named = by_name(spans)
    (turn,) = named["invoke_agent"]
    chats, (tool,) = named["chat"], named["execute_tool"]
    assert len(chats) == 2
    assert len(spans) == 4
    # one trace: the turn is the root, the model calls and the tool call its children
    assert {s.trace_id for s in spans} == {turn.trace_id}
    assert turn.parent_id == ""
    assert {s.parent_id for s in [*chats, tool]} == {turn.span_id}
    assert [s.client for s in (turn, *chats, tool)] == [False, True, True, False]
    assert turn.name == "invoke_agent Trellis"
    assert [c.name for c in chats] == ["chat scripted", "chat scripted"]
    assert tool.name == "execute_tool read_file"
    for span in spans:
        assert span.attributes["gen_ai.conversation.id"] == session_id
        assert not CONTENT_ATTRIBUTES & span.attributes.keys()  # not opted in
        assert not span.error
    assert turn.resource["service.name"] == "trellis"
    for span in (turn, *chats):
        assert span.attributes["gen_ai.provider.name"] == "trellis.scripted"
        assert span.attributes["gen_ai.request.model"] == "scripted"
    first = chats[0] if chats[0].start_ns < chats[1].start_ns else chats[1]
    # usage: input_tokens counts every input token, the cached ones included
    assert {k: v for k, v in first.attributes.items() if k.startswith("gen_ai.usage.")} == {
        "gen_ai.usage.input_tokens": 105,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.usage.cache_read.input_tokens": 90,
        "gen_ai.usage.cache_creation.input_tokens": 5,
    }
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert turn.attributes["gen_ai.usage.input_tokens"] == 125
    assert turn.attributes["gen_ai.usage.output_tokens"] == 10
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["trellis.turn.end_reason"] == "completed"
    assert tool.attributes["gen_ai.tool.name"] == "read_file"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    # the times are the log's
    events = run.events(session_id)
    assert turn.start_ns == ns(next(e.time for e in events if isinstance(e.data, TurnStart)))
    starts = sorted(ns(e.time) for e in events if isinstance(e.data, StepStart))
    assert sorted(c.start_ns for c in chats) == starts
    call = next(e for e in events if isinstance(e.data, ToolCallRecord))
    result = next(e for e in events if isinstance(e.data, ToolResultRecord))
    assert (tool.start_ns, tool.end_ns) == (ns(call.time), ns(result.time))
    assert tool.attributes["gen_ai.tool.call.id"] == call.data.call_id  # type: ignore[attr-defined]


def test_content_goes_only_when_opted_in_and_within_the_endpoints_class(
    run: Run, otlp: Collector
) -> None:
    run.configure(telemetry(otlp.url, "capture_content = true"))  # loopback: every class
    run.turn()
    named = by_name(otlp.wait_for(4))
    (turn,), (tool,) = named["invoke_agent"], named["execute_tool"]
    prompt = json.loads(str(turn.attributes["gen_ai.input.messages"]))
    assert prompt == [
        {"role": "user", "parts": [{"type": "text", "content": "what do my notes say?"}]}
    ]
    reply = json.loads(str(turn.attributes["gen_ai.output.messages"]))
    assert reply[0]["parts"] == [{"type": "text", "content": "It says to buy milk."}]
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {"path": "notes.txt"}
    assert tool.attributes["gen_ai.tool.call.result"] == "buy milk\n"
    second = max(named["chat"], key=lambda s: s.start_ns)
    inputs = json.loads(str(second.attributes["gen_ai.input.messages"]))
    # the whole request the model was given, not only what came since the call before
    assert [m["role"] for m in inputs] == ["user", "assistant", "tool"]
    assert inputs[0]["parts"] == [{"type": "text", "content": "what do my notes say?"}]
    assert inputs[1]["parts"][-1] == {
        "type": "tool_call",
        "id": "call_1",
        "name": "read_file",
        "arguments": {"path": "notes.txt"},
    }
    assert inputs[-1] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_1", "response": "buy milk\n"}],
    }
    assert "You are Trellis" in str(second.attributes["gen_ai.system_instructions"])

    # an endpoint allowed only public material gets markers where the (internal) content was
    otlp.spans.clear()
    run.configure(telemetry(otlp.url, "capture_content = true", 'egress = "public"'))
    run.turn()
    named = by_name(otlp.wait_for(4))
    (turn,), (tool,) = named["invoke_agent"], named["execute_tool"]
    sent = json.dumps([s.attributes for s in otlp.spans])
    assert "buy milk" not in sent
    assert "what do my notes say" not in sent
    assert "You are Trellis" not in sent
    assert "[redacted: internal]" in str(turn.attributes["gen_ai.input.messages"])
    assert tool.attributes["gen_ai.tool.call.result"] == "[redacted: internal]"
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {}
    assert tool.attributes["gen_ai.tool.name"] == "read_file"  # names and ids are no content


@pytest.mark.parametrize("content", [False, True])
def test_the_export_of_a_stored_session_sends_the_spans_the_live_run_sent(
    run: Run, otlp: Collector, content: bool
) -> None:
    """Live, a request comes from the Agent's view of it; exported, from the replayed log: the
    same spans, content included."""
    with_content = ("capture_content = true",) if content else ()
    run.configure(telemetry(otlp.url, *with_content))
    session_id = run.turn()
    live = sorted(otlp.wait_for(4), key=lambda s: s.span_id)
    run.configure("[telemetry]\n" + "\n".join(with_content) + "\n")  # the endpoint: --endpoint
    with collector() as later:
        code, out, err = run.main(
            "export", session_id[:8], "--format", "otlp", "--endpoint", later.url
        )
        assert (code, out) == (0, ""), err
        assert err == f"sent 4 spans of {session_id} to {later.url}/v1/traces\n"
        exported = sorted(later.wait_for(4), key=lambda s: s.span_id)
    assert exported == live


def test_the_export_takes_the_configured_endpoint_content_and_class(
    run: Run, otlp: Collector
) -> None:
    session_id = run.turn()  # nothing configured: nothing sent
    assert otlp.spans == []
    run.configure(telemetry(otlp.url, "capture_content = true", 'egress = "public"'))
    code, _, err = run.main("export", session_id, "--format", "otlp")
    assert code == 0, err
    (turn,) = by_name(otlp.wait_for(4))["invoke_agent"]
    assert "[redacted: internal]" in str(turn.attributes["gen_ai.input.messages"])
    otlp.spans.clear()
    code, _, err = run.main("export", session_id, "--format", "otlp", "--max-class", "internal")
    assert code == 0, err
    (turn,) = by_name(otlp.wait_for(4))["invoke_agent"]
    assert "what do my notes say?" in str(turn.attributes["gen_ai.input.messages"])


def session_of(stderr: str) -> str:
    return stderr.rsplit("[session ", 1)[1].split("]")[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_export_refusals_are_one_line(run: Run) -> None:
    session_id = run.turn()
    for args, says in [
        ((), "--format otlp: give --endpoint URL or set [telemetry] otlp_endpoint"),
        (("--endpoint", "ftp://x"), "--endpoint 'ftp://x': Value error, must be an http://"),
        (("--endpoint", "http://127.0.0.1:9", "-o", "t.bin"), "-o: --format otlp sends"),
    ]:
        code, out, err = run.main("export", session_id, "--format", "otlp", *args)
        assert (code, out) == (2, ""), err
        assert err.startswith(f"trellis: {says}"), err
        assert len(err.splitlines()) == 1
    code, _, err = run.main("export", session_id, "--format", "md", "--endpoint", "http://x")
    assert (code, err) == (2, "trellis: --endpoint: only --format otlp sends to an endpoint\n")
    dead = f"http://127.0.0.1:{free_port()}"
    run.configure(telemetry(dead, "timeout = 0.5"))
    code, _, err = run.main("export", session_id, "--format", "otlp")
    assert code == 2
    assert err == (
        f"trellis: {dead}/v1/traces did not take the 4 spans within 0.5 s "
        "(is a collector listening there?)\n"
    )


def test_a_dead_collector_does_not_fail_the_turn(run: Run) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    run.configure(telemetry(dead, "timeout = 0.5"))
    script = run.tmp_path / "script.json"
    script.write_text(json.dumps({"replies": TOOL_TURN}))
    code, out, err = run.main("run", "-p", "what do my notes say?", "--script", str(script))
    assert (code, out) == (0, "Looking. \nIt says to buy milk.\n")
    said = f"trellis: not every span reached {dead}/v1/traces (is a collector listening there?)"
    assert said in err.splitlines()
    ends = [e.data for e in run.events(session_of(err)) if isinstance(e.data, TurnEnd)]
    assert [end.reason for end in ends] == ["completed"]


def test_the_sdk_loads_only_when_telemetry_is_configured(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("")
    code = "from app.cli import main\nassert main(['run', '-p', 'hi']) == 0"
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"

    def loaded() -> set[str]:
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=tmp_path,
            env=trellis_env(home=tmp_path / "home", config=tmp_path / "config.toml"),
            capture_output=True,
            text=True,
            check=True,
        )
        return set(json.loads(done.stdout.splitlines()[-1]))

    def telemetry_modules(modules: set[str]) -> list[str]:
        ours = ("replay.otlp", "replay.trace_spans", "app.telemetry")
        return sorted(m for m in modules if m.startswith("opentelemetry") or m in ours)

    assert telemetry_modules(loaded()) == []
    with collector() as received:
        (tmp_path / "config.toml").write_text(telemetry(received.url))
        assert "opentelemetry.sdk.trace" in telemetry_modules(loaded())
        assert received.wait_for(2)


def test_the_telemetry_section() -> None:
    assert Config().telemetry.otlp_endpoint == ""  # nothing is sent unless configured
    local = TelemetryConfig(otlp_endpoint="http://127.0.0.1:4318")
    assert local.traces_url() == "http://127.0.0.1:4318/v1/traces"
    assert local.effective_egress() is PrivacyClass.restricted
    remote = TelemetryConfig(otlp_endpoint="https://otel.example.com/custom/traces")
    assert remote.traces_url() == "https://otel.example.com/custom/traces"
    assert remote.effective_egress() is PrivacyClass.internal
    declared = TelemetryConfig(otlp_endpoint="https://otel.example.com", egress="private")
    assert declared.effective_egress() is PrivacyClass.private


def test_a_project_file_may_not_send_traces_before_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRELLIS_HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    (project / ".trellis").mkdir(parents=True)
    (project / ".trellis" / "config.toml").write_text(telemetry("http://203.0.113.9:4318"))
    user = tmp_path / "user.toml"
    user.write_text("")
    config = load_config(project, user_file=user)
    assert config.telemetry.otlp_endpoint == ""


async def test_an_acp_session_is_traced_and_its_spans_flushed_when_the_server_closes(
    tmp_path: Path,
) -> None:
    from app.acp.core import AcpOptions, AcpServer
    from engine.gateway.scripted import Reply, ScriptedGateway
    from tests.acp.peer import Peer

    workspace = tmp_path / "ws"
    workspace.mkdir()
    with collector() as received:
        config = Config(telemetry=TelemetryConfig(otlp_endpoint=received.url))
        server = AcpServer(
            AcpOptions(
                store_path=tmp_path / "data" / "sessions.sqlite",
                roots=[workspace],
                config=config,
                gateway_factory=lambda: ScriptedGateway([Reply(text="Hello")]),
            )
        )
        peer = Peer(server)
        await peer.initialize()
        opened = await peer.result("session/new", {"cwd": str(workspace), "mcpServers": []})
        session_id = str(opened["sessionId"])
        prompt = [{"type": "text", "text": "hi"}]
        await peer.result("session/prompt", {"sessionId": session_id, "prompt": prompt})
        await server.aclose()
        spans = received.wait_for(2)
    assert sorted(s.name for s in spans) == ["chat scripted", "invoke_agent Trellis"]
    assert {s.attributes["gen_ai.conversation.id"] for s in spans} == {session_id}


async def test_a_console_session_is_traced_and_its_spans_flushed_when_the_console_exits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.gateway.scripted import Reply
    from tests.tui.conftest import ConsoleTestApp
    from tests.tui.test_console import send
    from tests.tui.test_long_session import opened, settle

    monkeypatch.setenv("TRELLIS_HOME", str(tmp_path / "home"))
    workspace, data = tmp_path / "ws", tmp_path / "data"
    workspace.mkdir()
    data.mkdir()
    with collector() as received:
        config = Config(telemetry=TelemetryConfig(otlp_endpoint=received.url))
        app = ConsoleTestApp(workspace, data, [Reply(text="Hello")], config=config)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(app, pilot)
            session_id = app.live.session_id
            await send(app, pilot, "hi")
            await settle(app, pilot)
            await app.live.when_idle()
        spans = received.wait_for(2)
    assert sorted(s.name for s in spans) == ["chat scripted", "invoke_agent Trellis"]
    assert {s.attributes["gen_ai.conversation.id"] for s in spans} == {session_id}


def test_a_turn_the_log_leaves_open_is_sent_as_unfinished(run: Run) -> None:
    from replay.trace_spans import UNKNOWN_PROVIDER, resolver_of, spans_of

    session_id = run.turn()
    events = run.events(session_id)
    call = next(i for i, e in enumerate(events) if isinstance(e.data, ToolCallRecord))
    crashed = events[: call + 1]  # the process died while the tool ran
    spans = spans_of(crashed, session_id, resolver_of({}))
    assert [(s.name, s.error) for s in spans] == [
        ("chat scripted", "unfinished"),
        ("execute_tool read_file", "unfinished"),
        ("invoke_agent Trellis", "unfinished"),
    ]
    reply = next(e for e in crashed if isinstance(e.data, AssistantMessage))
    # the model call ended with its reply; what the log never closed, at its last event
    assert [s.end_ns for s in spans] == [ns(reply.time), ns(crashed[-1].time), ns(crashed[-1].time)]
    # the configuration no longer names the entry: the provider is unknown, the model its name
    assert spans[-1].attributes["gen_ai.provider.name"] == UNKNOWN_PROVIDER
    assert spans[-1].attributes["gen_ai.request.model"] == "scripted"
