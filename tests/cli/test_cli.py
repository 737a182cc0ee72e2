"""The headless `trellis` command (issue 4), run as a real process with TRELLIS_HOME and
TRELLIS_CONFIG inside the test's temp dir: what it prints, its exit code, and the session it stores."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from app import cli
from engine.events import (
    Event,
    PermissionDecision,
    PermissionModeSet,
    SessionTitle,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    UserMessage,
    decode_event,
    decode_live_event,
)
from engine.store.sqlite.store import SQLiteStore
from tests.agent.harness import CliRun, payloads, trellis, trellis_argv, trellis_env


@dataclass(frozen=True, slots=True)
class Env:
    home: Path
    config: Path
    workspace: Path

    def run(self, *args: str, cwd: Path | None = None) -> CliRun:
        return trellis(list(args), home=self.home, config=self.config, cwd=cwd or self.workspace)

    def stored(self, session_id: str) -> tuple[Event, ...]:
        async def read() -> tuple[Event, ...]:
            async with SQLiteStore(self.home / "sessions.sqlite") as store:
                return (await store.inspect(session_id)).events

        return asyncio.run(read())

    def sessions(self) -> list[str]:
        async def read() -> list[str]:
            async with SQLiteStore(self.home / "sessions.sqlite") as store:
                return [s.id for s in (await store.list(cwd=None)).sessions]

        return asyncio.run(read())


@pytest.fixture
def env(tmp_path: Path) -> Env:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = tmp_path / "config.toml"
    config.write_text("")
    return Env(home=tmp_path / "home", config=config, workspace=workspace)


@dataclass(frozen=True, slots=True)
class InProcess:
    """`app.cli.main` called in this process (fast), with the same environment as `Env`."""

    capsys: pytest.CaptureFixture[str]
    workspace: Path

    def main(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = cli.main(list(args))
        out, err = self.capsys.readouterr()
        return code, out, err


@pytest.fixture
def inproc(
    env: Env, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> InProcess:
    monkeypatch.setenv("TRELLIS_HOME", str(env.home))
    monkeypatch.setenv("TRELLIS_CONFIG", str(env.config))
    monkeypatch.chdir(env.workspace)
    return InProcess(capsys, env.workspace)


def session_of(stderr: str) -> str:
    found = re.search(r"\[session (\w+)\]", stderr)
    assert found is not None, stderr
    return found.group(1)


def write_script(path: Path, replies: list[dict[str, object]]) -> Path:
    if path.suffix == ".json":
        path.write_text(json.dumps({"replies": replies}))
        return path
    lines: list[str] = []
    for reply in replies:
        lines.append("[[replies]]")
        for key, value in reply.items():
            if key != "tool_calls":
                lines.append(f"{key} = {json.dumps(value)}")
        for call in reply.get("tool_calls", []):  # type: ignore[attr-defined]
            lines.append("[[replies.tool_calls]]")
            lines.append(f"name = {json.dumps(call['name'])}")
            arguments = ", ".join(f"{k} = {json.dumps(v)}" for k, v in call["arguments"].items())
            lines.append(f"arguments = {{ {arguments} }}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_plain_reply_is_printed_and_the_session_stored(env: Env) -> None:
    done = env.run("run", "-p", "  Hello there  \nsecond line", "--cwd", str(env.workspace))
    assert done.code == 0, done.stderr
    assert "You said:" in done.stdout
    assert "Hello there" in done.stdout
    events = env.stored(session_of(done.stderr))
    assert [t.title for t in payloads(events, SessionTitle)] == ["Hello there"]
    assert payloads(events, UserMessage)[0].content == "  Hello there  \nsecond line"
    assert [t.reason for t in payloads(events, TurnEnd)] == ["completed"]


def test_a_prompt_that_is_not_utf8_keeps_the_users_words(env: Env) -> None:
    # argv is bytes; subprocess encodes this str back to b"caf\xe9 \\d" (surrogateescape)
    typed = os.fsdecode(b"caf\xe9 \\d")
    done = env.run("run", "-p", typed)
    assert done.code == 0, done.stderr
    events = env.stored(session_of(done.stderr))
    assert [m.content for m in payloads(events, UserMessage)] == ["caf\\xe9 \\\\d"]
    assert [t.title for t in payloads(events, SessionTitle)] == ["caf\\xe9 \\\\d"]
    assert [t.reason for t in payloads(events, TurnEnd)] == ["completed"]
    pinned = env.run("run", "-p", "/pin " + typed)  # a command takes the same escaped words
    assert pinned.code == 0, pinned.stderr


def test_json_prints_every_event(env: Env) -> None:
    done = env.run("run", "-p", "hi", "--json")
    assert done.code == 0, done.stderr
    durable: list[Event] = []
    live_types: set[str] = set()
    session, *lines = done.stdout.splitlines()
    assert json.loads(session)["type"] == "session"  # test_the_first_json_line_names_the_session
    for line in lines:
        raw = json.loads(line)
        if "seq" in raw:
            durable.append(decode_event(raw))
        else:
            live_types.add(decode_live_event(raw).type)
    assert [e.seq for e in durable] == list(range(len(durable)))
    assert durable[0].type == "model/bind"
    assert durable[-1].type == "turn/end"
    assert "assistant/delta" in live_types
    (title,) = payloads(durable, SessionTitle)
    stored = env.stored(env.sessions()[0])
    assert [e.model_dump() for e in stored] == [e.model_dump() for e in durable]
    assert title.title == "hi"


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_script_file(env: Env, tmp_path: Path, suffix: str) -> None:
    (env.workspace / "notes.txt").write_text("remember the milk\n")
    script = write_script(
        tmp_path / f"script{suffix}",
        [
            {
                "text": "Looking. ",
                "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}],
            },
            {"text": "It says to remember the milk."},
        ],
    )
    done = env.run("run", "-p", "what do my notes say?", "--script", str(script))
    assert done.code == 0, done.stderr
    assert "It says to remember the milk." in done.stdout
    assert "-> read_file(path='notes.txt')" in done.stderr
    events = env.stored(session_of(done.stderr))
    assert [c.name for c in payloads(events, ToolCallRecord)] == ["read_file"]


def test_bad_script_file(env: Env, tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text("{not json")
    done = env.run("run", "-p", "hi", "--script", str(script))
    assert done.code == 2
    assert str(script) in done.stderr
    assert "not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr
    assert env.sessions() == []  # nothing stored for a run that never started


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("bad.toml", "[[replies]]\ntext = 3\n", "replies[0].text"),
        ("bad.yaml", "replies: []\n", "must be a .json or .toml file"),
        ("missing.json", None, "cannot read the script"),
    ],
)
def test_bad_script_file_in_process(
    inproc: InProcess, tmp_path: Path, name: str, text: str | None, says: str
) -> None:
    script = tmp_path / name
    if text is not None:
        script.write_text(text)
    code, _, err = inproc.main("run", "-p", "hi", "--script", str(script))
    assert code == 2
    assert str(script) in err
    assert says in err


def test_unknown_model(env: Env) -> None:
    done = env.run("run", "-p", "hi", "--model", "gpt-17")
    assert done.code == 2
    assert "unknown model 'gpt-17'" in done.stderr
    assert "scripted" in done.stderr  # the configured ones are named
    assert "Traceback" not in done.stderr


def test_gateway_error_exits_1(env: Env, tmp_path: Path) -> None:
    script = write_script(tmp_path / "fail.json", [{"error": "the model fell over"}])
    done = env.run("run", "-p", "hi", "--script", str(script))
    assert done.code == 1
    assert "the model fell over" in done.stderr
    assert "turn ended (error)" in done.stderr
    events = env.stored(session_of(done.stderr))
    assert [t.reason for t in payloads(events, TurnEnd)] == ["error"]


def test_permission_flags(env: Env, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "write.json",
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}
                ]
            },
            {"text": "done"},
        ],
    )
    denied = env.run("run", "-p", "write it", "--script", str(script))
    assert denied.code == 0, denied.stderr
    assert "rerun with --allow write_file or --mode accept-edits, or --approve-all" in denied.stderr
    assert not (env.workspace / "a.txt").exists()

    allowed = env.run("run", "-p", "write it", "--script", str(script), "--allow", "write_file")
    assert allowed.code == 0, allowed.stderr
    assert (env.workspace / "a.txt").read_text() == "A"
    decisions = payloads(env.stored(session_of(allowed.stderr)), PermissionDecision)
    assert [d.decision for d in decisions] == ["allow"]


def test_the_permission_flags_are_modes(env: Env, tmp_path: Path) -> None:
    """`--deny-all` is `--mode read-only`, `--approve-all` is `--mode approve-all`, and a
    resumed session keeps its mode but never approve-all, saying so on stderr."""
    write: dict[str, object] = {
        "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}}]
    }
    script = write_script(tmp_path / "write.json", [write, {"text": "done"}])
    refused = env.run("run", "-p", "write it", "--script", str(script), "--deny-all")
    assert refused.code == 0, refused.stderr
    assert "write_file was refused: the session is in read-only mode" in refused.stderr
    assert not (env.workspace / "a.txt").exists()
    stored = env.stored(session_of(refused.stderr))
    assert [m.mode for m in payloads(stored, PermissionModeSet)] == ["read-only"]

    approved = env.run("run", "-p", "write it", "--script", str(script), "--approve-all")
    assert approved.code == 0, approved.stderr
    assert (env.workspace / "a.txt").read_text() == "A"
    session = session_of(approved.stderr)
    again = env.run("run", "-p", "write again", "--script", str(script), "--resume", session)
    assert again.code == 0, again.stderr
    assert "mode: ask (approve all ends when a session is reopened)" in again.stderr
    assert "write_file needs permission" in again.stderr
    modes = [(m.mode, m.resumed) for m in payloads(env.stored(session), PermissionModeSet)]
    assert modes == [("approve-all", False), ("ask", True)]


def test_allow_in_read_only_mode_is_refused(inproc: InProcess) -> None:
    code, _, err = inproc.main("run", "-p", "x", "--mode", "read-only", "--allow", "write_file")
    assert code == 2
    assert "--allow write_file: read-only mode refuses every tool" in err


def test_contradicting_permission_flags(inproc: InProcess) -> None:
    with pytest.raises(SystemExit) as exited:
        inproc.main("run", "-p", "x", "--approve-all", "--deny-all")
    assert exited.value.code == 2
    assert "not allowed with argument" in inproc.capsys.readouterr().err


def test_a_command_as_the_prompt(env: Env) -> None:
    usage = env.run("run", "-p", "/pin")
    assert usage.code == 2
    assert "usage: /pin TEXT" in usage.stderr


def test_an_unknown_command_as_the_prompt(inproc: InProcess) -> None:
    code, _, err = inproc.main("run", "-p", "/nope")
    assert code == 2
    assert "unknown command /nope" in err
    code, out, _ = inproc.main("run", "-p", "/pin keep it short")
    assert code == 0
    assert "pinned pin1" in out


def test_quit_as_the_prompt_says_there_is_nothing_to_leave(inproc: InProcess) -> None:
    for line in ("/quit", "/exit"):
        code, out, err = inproc.main("run", "-p", line)
        assert code == 0, err
        assert "nothing to leave here" in out
        assert "not stored: it holds no message" in err


def test_a_failed_command_leaves_no_session_behind(env: Env) -> None:
    failed = env.run("run", "-p", "/bogus")
    assert failed.code == 2
    assert "unknown command /bogus" in failed.stderr
    pinned = env.run("run", "-p", "/pin short answers")  # a command alone says nothing either
    assert pinned.code == 0, pinned.stderr
    assert "not stored: it holds no message" in pinned.stderr
    listed = env.run("sessions")
    assert listed.code == 0
    assert listed.stdout.startswith("no sessions")
    assert env.sessions() == []
    injected = env.run("run", "-p", "/inject the build is green")  # a message: stored
    assert env.sessions() == [session_of(injected.stderr)]


def test_sessions_lists_the_stored_sessions(env: Env) -> None:
    done = env.run("run", "-p", "First prompt line\nmore")
    session_id = session_of(done.stderr)
    listed = env.run("sessions")
    assert listed.code == 0
    header, line = listed.stdout.splitlines()
    assert header.split() == ["ID", "UPDATED", "TURNS", "EVENTS", "MODEL", "TITLE"]
    assert line.startswith(session_id)
    assert line.rstrip().endswith("First prompt line")


def test_sessions_by_workspace(inproc: InProcess, tmp_path: Path) -> None:
    code, out, _ = inproc.main("sessions")
    assert (code, "no sessions" in out) == (0, True)
    code, _, err = inproc.main("run", "-p", "stored here")
    session_id = session_of(err)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, out, _ = inproc.main("sessions", "--cwd", str(elsewhere))
    assert "no sessions" in out
    assert "--all" in out
    code, out, _ = inproc.main("sessions", "--all", "--cwd", str(elsewhere))
    assert session_id in out
    assert "stored here" in out


def test_a_workspace_whose_name_is_not_utf8(env: Env, tmp_path: Path) -> None:
    workspace = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    workspace.mkdir()
    (workspace / "notes.txt").write_text("remember the milk\n")
    (workspace / ".trellis").mkdir()  # untrusted: its model entry is skipped, and said so
    (workspace / ".trellis" / "config.toml").write_text('[models.x]\nprovider = "scripted"\n')
    empty = env.run("sessions", cwd=workspace)
    assert (empty.code, empty.stderr) == (0, "")
    assert empty.stdout.startswith(f"no sessions in {tmp_path}/caf\\xe9 ")
    done = env.run("run", "-p", "hello", cwd=workspace)
    assert done.code == 0, done.stderr
    session_id = session_of(done.stderr)
    listed = env.run("sessions", cwd=workspace)
    assert (listed.code, listed.stdout.splitlines()[1].split()[:1]) == (0, [session_id])
    # resumed from elsewhere, it runs in its own workspace: the tool reads the file there
    resumed = env.run("run", "--resume", session_id, "-p", "read notes.txt", cwd=tmp_path)
    assert resumed.code == 0, resumed.stderr
    assert "skipped models.x" in resumed.stderr  # with its own workspace's config
    results = payloads(env.stored(session_id), ToolResultRecord)
    assert [(r.is_error, "remember the milk" in r.content) for r in results] == [(False, True)]


def test_models_lists_the_configured_entries(env: Env) -> None:
    env.config.write_text(
        'default_model = "local"\n'
        "[models.local]\n"
        'provider = "openai"\n'
        'base_url = "http://127.0.0.1:11434/v1"\n'
        'model = "qwen3:8b"\n'
        "[models.cloud]\n"
        'provider = "anthropic"\n'
        'model = "claude-x"\n'
    )
    done = env.run("models")
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["name", "provider", "model", "window", "egress", "from"]
    rows = {ln[2:].split()[0]: (ln[:1].strip(), ln[2:].split()[1:]) for ln in lines[1:4]}
    assert rows == {
        "scripted": ("", ["scripted", "scripted", "-", "restricted", "built", "in"]),
        "local": ("*", ["openai", "qwen3:8b", "?", "restricted", "user", "config"]),
        "cloud": ("", ["anthropic", "claude-x", "?", "internal", "user", "config"]),
    }
    assert f"user config: {env.config}" in lines


def test_bad_config_names_file_and_key(env: Env) -> None:
    env.config.write_text('[context]\nchar_cap = "big"\n')
    done = env.run("run", "-p", "hi")
    assert done.code == 2
    assert str(env.config) in done.stderr
    assert "context.char_cap" in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_project_config_names_file_and_key(inproc: InProcess) -> None:
    project = inproc.workspace / ".trellis" / "config.toml"
    project.parent.mkdir()
    project.write_text('[models.local]\nprovider = "openai"\ncontext_window = 0\n[context]\n')
    code, _, err = inproc.main("models", "--trust-project")
    assert code == 2
    assert str(project) in err
    assert "models.local.context_window" in err
    # untrusted, the model entry is skipped (and named); a key that applies is still checked
    code, out, err = inproc.main("models")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[:2]] == ["name", "*"]
    assert "scripted" in out.splitlines()[1]
    assert "skipped models.local " in err
    project.write_text("[context]\nchar_cap = 0\n")
    code, _, err = inproc.main("models")
    assert code == 2
    assert f"{project}: context.char_cap: " in err


def test_bad_area_path_in_config(env: Env) -> None:
    env.config.write_text('[[areas]]\npath = "tests.agent.no_such_module:Area"\n')
    done = env.run("run", "-p", "hi")
    assert done.code == 2
    assert "tests.agent.no_such_module:Area" in done.stderr
    assert "Traceback" not in done.stderr
    assert env.sessions() == []


def test_cwd_not_a_directory(env: Env) -> None:
    file = env.workspace / "file.txt"
    file.write_text("x")
    done = env.run("run", "-p", "hi", "--cwd", str(file))
    assert done.code == 2
    assert f"--cwd {file} is not a directory" in done.stderr


def test_cwd_missing(inproc: InProcess) -> None:
    missing = inproc.workspace / "missing"
    code, _, err = inproc.main("run", "-p", "hi", "--cwd", str(missing))
    assert code == 2
    assert f"--cwd {missing} is not a directory" in err


# --- output for scripts and pipes ---------------------------------------------------------

EXIT_READER_GONE = 141


def first_line_then_close(env: Env, *args: str) -> tuple[int, str, str]:
    """`trellis ARGS | head -1`: the first line read, then the pipe closed; the exit status,
    that line and what was printed on stderr."""
    child = subprocess.Popen(
        trellis_argv(list(args)),
        cwd=env.workspace,
        env=trellis_env(home=env.home, config=env.config),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stderr is not None
    line = child.stdout.readline()
    child.stdout.close()
    err = child.stderr.read()
    return child.wait(timeout=60), line, err


def long_reply_script(tmp_path: Path) -> Path:
    """A reply far longer than a pipe's buffer (64 KiB), so the writer outlives its reader."""
    text = "\n".join(f"line {i} of a long reply" for i in range(20_000))
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"replies": [{"text": text}]}))
    return path


async def many_sessions(home: Path, workspace: Path, count: int) -> None:
    async with SQLiteStore(home / "sessions.sqlite") as store:
        for _ in range(count):
            await store.create(cwd=str(workspace))


def test_a_reader_that_stops_reading_ends_each_command_quietly(env: Env, tmp_path: Path) -> None:
    script = long_reply_script(tmp_path)
    whole = env.run("run", "-p", "store it", "--script", str(script))
    assert whole.code == 0, whole.stderr
    stored = session_of(whole.stderr)[:8]
    for args in (
        ["show", stored],
        ["export", stored, "--format", "md"],
        ["export", stored, "--format", "json"],
        ["run", "-p", "go", "--json", "--script", str(script)],
    ):
        code, _, err = first_line_then_close(env, *args)
        # a write the pipe took part of before it closed ends as if it had all gone (0)
        assert (code in (0, EXIT_READER_GONE), err) == (True, ""), args
    asyncio.run(many_sessions(env.home, env.workspace, 1_500))
    for args in (["sessions", "--limit", "2000"], ["sessions", "--limit", "2000", "--json"]):
        code, _, err = first_line_then_close(env, *args)
        assert (code in (0, EXIT_READER_GONE), err) == (True, ""), args
    # no one reads the rest of a reply: the turn is cancelled, and stored as such
    before = set(env.sessions())
    code, line, err = first_line_then_close(env, "run", "-p", "go", "--script", str(script))
    assert (code, line, err.count("Traceback")) == (EXIT_READER_GONE, "line 0 of a long reply\n", 0)
    (cancelled,) = set(env.sessions()) - before
    events = env.stored(cancelled)
    assert [t.reason for t in payloads(events, TurnEnd)] == ["cancelled"]
    assert [m.content for m in payloads(events, UserMessage)] == ["go"]


def test_the_first_json_line_names_the_session(env: Env) -> None:
    done = env.run("run", "-p", "hi", "--json")
    assert done.code == 0, done.stderr
    first, *events = [json.loads(line) for line in done.stdout.splitlines()]
    (stored,) = env.sessions()
    assert first == {
        "type": "session",
        "id": stored,
        "cwd": str(env.workspace),
        "model": "scripted",
        "resumed": False,
    }
    assert events[0]["type"] == "model/bind"
    assert events[0]["seq"] == 0
    again = env.run("run", "-p", "and again", "--json", "--resume", stored[:8])
    assert json.loads(again.stdout.splitlines()[0]) == {**first, "resumed": True}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["run", "--bogus"], "unrecognized arguments: --bogus"),
        (["run", "-p", "x", "--bogus"], "unrecognized arguments: --bogus"),
        (["run"], "the following arguments are required: -p/--prompt"),
        (["export", "abcd", "--bogus"], "unrecognized arguments: --bogus"),
        (["export", "abcd"], "the following arguments are required: --format"),
        (["run", "-p", ""], "-p/--prompt is empty"),
        (["run", "-p", " \n "], "-p/--prompt is empty"),
    ],
)
def test_an_unknown_argument_is_named_and_an_empty_prompt_refused(
    env: Env, args: list[str], said: str
) -> None:
    done = env.run(*args)
    assert done.code == 2
    assert said in done.stderr
    assert "Traceback" not in done.stderr
    assert env.sessions() == []  # nothing stored


def test_a_headless_prompt_attaches_the_files_it_mentions(env: Env) -> None:
    """As the console does: `@path` attaches the file; one line for each that cannot be."""
    (env.workspace / "README.md").write_text("read me first\n")
    done = env.run("run", "-p", "explain @README.md, @missing.md and @../up.txt")
    assert done.code == 0, done.stderr
    (message,) = payloads(env.stored(session_of(done.stderr)), UserMessage)
    assert [(a.name, a.text) for a in message.attachments] == [("README.md", "read me first\n")]
    assert "read me first" in done.stdout  # the offline model shows what it was given
    problems = [line for line in done.stderr.splitlines() if "not attached" in line]
    assert problems == [
        "trellis: not attached: cannot read 'missing.md': No such file or directory",
        "trellis: not attached: path '../up.txt' is outside the workspace",
    ]


def test_a_session_id_prefix_needs_four_characters(env: Env) -> None:
    """`trellis delete 4 --yes` deleted whichever session's id began with a 4."""
    done = env.run("run", "-p", "keep me")
    session_id = session_of(done.stderr)
    for args in (
        ["delete", session_id[:1], "--yes"],
        ["show", session_id[:3]],
        ["export", session_id[:2], "--format", "md"],
        ["fork", session_id[:3]],
        ["run", "-p", "more", "--resume", session_id[:3]],
    ):
        refused = env.run(*args)
        assert refused.code == 2, args
        assert "is too short: give at least 4 characters of the id" in refused.stderr, args
    assert env.sessions() == [session_id]
    assert env.run("show", session_id[:4]).code == 0


def test_commands_and_modes_are_in_show_and_exports(env: Env) -> None:
    """A command that changed the session and a mode change read in `trellis show` and every
    export as they did live, at their place in the session."""
    first = env.run("run", "-p", "hello")
    assert first.code == 0, first.stderr
    session = session_of(first.stderr)
    for line in ("/mode read-only", "/pin keep it short"):
        done = env.run("run", "--resume", session, "-p", line)
        assert done.code == 0, done.stderr
    shown = env.run("show", session).stdout
    assert "· Mode: read-only" in shown
    assert "Command: /mode read-only\n  mode read-only: tools that write" in shown
    assert "Command: /pin keep it short\n  pinned pin1" in shown
    assert shown.index("Mode: read-only") < shown.index("Command: /pin")
    markdown = env.run("export", session, "--format", "md").stdout
    assert "**Command: /pin keep it short**" in markdown
    assert "*Mode: read-only*" in markdown
    html = env.run("export", session, "--format", "html").stdout
    assert "Command: /pin keep it short" in html
    exported = json.loads(env.run("export", session, "--format", "json").stdout)
    types = [event["type"] for event in exported["events"]]
    assert types.count("command/run") == 2
    assert types.count("permission/mode") == 1
    # the command's words are internal, as the user's own are: a public export hides them
    public = env.run("export", session, "--format", "md", "--max-class", "public").stdout
    assert "**Command: /pin [redacted: internal]**" in public
    assert "keep it short" not in public
