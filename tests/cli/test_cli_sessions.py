"""`trellis sessions --json`, `show`, `export`, `fork`, `delete` and `run --resume` with id prefixes,
run in process against a store in the test's temp dir."""

from __future__ import annotations

import asyncio
import builtins
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from app import cli
from engine.store.sqlite.store import SQLiteStore
from tests.cli.test_cli_start import EVENT_MODELS, loaded_after


@dataclass(frozen=True, slots=True)
class Cli:
    capsys: pytest.CaptureFixture[str]
    home: Path

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = cli.main(list(args))
        out, err = self.capsys.readouterr()
        return code, out, err

    def fails(self, *args: str) -> str:
        """The one line a refused command prints (its exit code is 2)."""
        code, out, err = self(*args)
        assert (code, out) == (2, ""), err
        (line,) = err.splitlines()
        return line

    def session(self, prompt: str) -> str:
        code, _, err = self("run", "-p", prompt)
        assert code == 0, err
        found = re.search(r"\[session (\w+)\]", err)
        assert found is not None, err
        return found.group(1)

    def create(self, session_id: str) -> None:
        async def create() -> None:
            async with SQLiteStore(self.home / "sessions.sqlite") as store:
                await store.create(cwd="/w", session_id=session_id)
                await store.release(session_id)

        asyncio.run(create())


@pytest.fixture
def trellis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Cli:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("TRELLIS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRELLIS_CONFIG", str(config))
    monkeypatch.chdir(workspace)
    return Cli(capsys, tmp_path / "home")


def test_sessions_json_lists_the_summary_of_each(trellis: Cli) -> None:
    first = trellis.session("hello there")
    code, out, _ = trellis("run", "--resume", first[:6], "-p", "and again")
    assert code == 0
    second = trellis.session("another")
    code, out, _ = trellis("sessions", "--json")
    assert code == 0
    listed = json.loads(out)
    assert [s["id"] for s in listed] == [second, first]
    keys = ["id", "title", "cwd", "model", "created", "updated", "turns", "events", "parent"]
    assert list(listed[1]) == [*keys, "fork_seq"]
    assert (listed[1]["title"], listed[1]["turns"], listed[1]["parent"]) == ("hello there", 2, None)
    code, out, _ = trellis("sessions", "--json", "--cwd", "/elsewhere")
    assert json.loads(out) == []


def test_show_prints_the_transcript_plainly_when_piped(trellis: Cli) -> None:
    session = trellis.session("hello there")
    code, out, _ = trellis("show", session[:5])
    assert code == 0
    assert "\x1b[" not in out
    lines = out.splitlines()
    assert lines[0] == f"hello there  {session}"
    assert "User" in lines
    assert "  hello there" in lines
    assert any(line.startswith("Turn 1 · completed · 1 step") for line in lines)
    code, out, _ = trellis("show", session, "--at", "5")
    assert code == 0
    assert "Turn 1 · running" in out
    assert "--at 999" in trellis.fails("show", session, "--at", "999")
    assert "--at -1" in trellis.fails("show", session, "--at", "-1")


def test_export_writes_each_format(trellis: Cli, tmp_path: Path) -> None:
    session = trellis.session("hello there")
    code, out, _ = trellis("export", session[:4], "--format", "json")
    assert code == 0
    assert json.loads(out)["session"]["id"] == session
    code, out, _ = trellis("export", session, "--format", "md")
    assert out.startswith("# hello there\n")
    target = tmp_path / "out.html"
    code, out, err = trellis("export", session, "--format", "html", "-o", str(target))
    assert (code, out) == (0, "")
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert str(target) in err
    code, out, _ = trellis("export", session, "--format", "md", "--max-class", "public")
    assert "hello there" not in out
    assert "[redacted: internal]" in out


def test_fork_prints_the_new_id_and_delete_asks_first(
    trellis: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = trellis.session("hello there")
    code, out, _ = trellis("fork", session[:6])
    assert code == 0
    whole = out.strip()
    code, out, _ = trellis("fork", session, "--at", "4")  # before the first turn
    assert code == 0
    early = out.strip()
    code, out, _ = trellis("sessions", "--json")
    listed = {s["id"]: s for s in json.loads(out)}
    forks = {sid: (s["parent"], s["fork_seq"], s["turns"]) for sid, s in listed.items()}
    assert forks[early] == (session, 4, 0)
    assert forks[whole] == (session, listed[session]["events"], 1)

    assert "--yes" in trellis.fails("delete", early)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    answers = iter(["n", "y"])
    monkeypatch.setattr(builtins, "input", lambda question: next(answers))
    code, _, err = trellis("delete", early)
    assert (code, err.strip()) == (1, "nothing deleted")
    code, _, err = trellis("delete", early)
    assert (code, err.strip()) == (0, f"deleted {early}")
    code, _, _ = trellis("delete", whole, "--yes")
    code, out, _ = trellis("sessions", "--json")
    assert [s["id"] for s in json.loads(out)] == [session]


def test_bad_ids_formats_classes_and_fork_points_are_one_line(trellis: Cli) -> None:
    session = trellis.session("hello there")
    trellis.create("abcd1")
    trellis.create("abcd2")
    for command in (["show"], ["export", "--format", "md"], ["fork"], ["delete", "--yes"]):
        assert "no session with id 'zzzz'" in trellis.fails(*command[:1], "zzzz", *command[1:])
        assert "'abcd' is ambiguous: abcd1, abcd2" in trellis.fails(
            *command[:1], "abcd", *command[1:]
        )
        assert "'abc' is too short" in trellis.fails(*command[:1], "abc", *command[1:])
    assert "ambiguous" in trellis.fails("run", "--resume", "abcd", "-p", "hi")
    assert "--format 'pdf'" in trellis.fails("export", session, "--format", "pdf")
    assert "--max-class" in trellis.fails(
        "export", session, "--format", "md", "--max-class", "secret"
    )
    assert "seq 5" in trellis.fails("fork", session, "--at", "5")  # inside the turn
    assert "seq 0" in trellis.fails("fork", session, "--at", "0")


def sessions_with_prefixes(trellis: Cli) -> str:
    """A session to open by a prefix of its id, and two ids that share the prefix `abcd`."""
    session = trellis.session("hello there")
    trellis.create("abcd1")
    trellis.create("abcd2")
    return session


def test_the_console_resumes_a_session_by_a_prefix_of_its_id(
    trellis: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.tui.app import TrellisApp

    session = sessions_with_prefixes(trellis)
    opened: list[str | None] = []
    monkeypatch.setattr(TrellisApp, "run", lambda app: opened.append(app._session_id))
    assert trellis("--resume", session[:8])[0] == 0
    assert opened == [session]
    assert "'abcd' is ambiguous: abcd1, abcd2" in trellis.fails("--resume", "abcd")


def test_replay_takes_a_prefix_and_refuses_an_unknown_id_before_the_console_starts(
    trellis: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.tui.app import TrellisApp

    session = sessions_with_prefixes(trellis)
    opened: list[tuple[str | None, str | None]] = []
    monkeypatch.setattr(
        TrellisApp, "run", lambda app: opened.append((app._replay, app._session_id))
    )
    assert trellis("replay", session[:8])[0] == 0
    assert opened == [(session, None)]
    assert "'abcd' is ambiguous: abcd1, abcd2" in trellis.fails("replay", "abcd")
    assert "no session with id 'zzzz'" in trellis.fails("replay", "zzzz")
    assert len(opened) == 1  # the refused ones never took the terminal


def test_sessions_json_loads_no_event_model(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    loaded = loaded_after(
        "from app.cli import main\nassert main(['sessions', '--all', '--json']) == 0", tmp_path
    )
    assert sorted(loaded & set(EVENT_MODELS)) == []


def test_sessions_prints_a_table_under_a_header(trellis: Cli) -> None:
    once = trellis.session("asked once")
    twice = trellis.session("asked twice")
    assert trellis("run", "--resume", twice, "-p", "and again")[0] == 0
    trellis.create("empty0")
    code, out, _ = trellis("sessions")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["ID", "UPDATED", "TURNS", "EVENTS", "MODEL", "TITLE"]
    lines = {line.split()[0]: line for line in rows}
    assert set(lines) == {once, twice}  # "empty0" is in another workspace
    at = {name: header.index(name) for name in header.split()}
    for line in rows:  # each cell under its heading, the counts right-aligned under theirs
        for name in ("UPDATED", "MODEL", "TITLE"):
            assert line[at[name] - 2 : at[name] + 1].startswith("  ")
            assert line[at[name]] != " "
        for name in ("TURNS", "EVENTS"):
            end = at[name] + len(name)
            assert line[end - 1] != " "
            assert line[end : end + 2] == "  "
    counts = {s["id"]: s["events"] for s in json.loads(trellis("sessions", "--json")[1])}
    assert lines[once].split()[3:5] == ["1", str(counts[once])]  # turns, events
    assert lines[twice].split()[3] == "2"
    assert lines[once].endswith("  asked once")
    code, everywhere, _ = trellis("sessions", "--all")
    assert "empty0" in everywhere
    assert "\x1b[" not in out + everywhere


def test_a_fork_says_of_what_in_the_list(trellis: Cli) -> None:
    parent = trellis.session("the parent")
    code, out, _ = trellis("fork", parent, "--at", "4")
    assert code == 0
    fork = out.strip()
    code, out, _ = trellis("sessions")
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert lines[fork].endswith(f"  the parent  ↳ fork of {parent[:8]} @4")
    assert lines[parent].endswith("  the parent")


def test_sessions_of_every_workspace_name_theirs(
    trellis: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    here = trellis.session("asked here")
    trellis.create("elsewhere0")  # in /w
    code, out, _ = trellis("sessions")
    assert "WORKSPACE" not in out.splitlines()[0]
    code, out, _ = trellis("sessions", "--all")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["ID", "UPDATED", "TURNS", "EVENTS", "MODEL", "WORKSPACE", "TITLE"]
    lines = {line.split()[0]: line for line in rows}
    column = header.index("WORKSPACE")
    assert lines[here][column:] == "~/workspace  asked here"
    assert lines["elsewhere0"][column:].rstrip() == "/w"
