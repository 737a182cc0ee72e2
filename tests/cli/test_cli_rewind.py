"""`trellis diff`, `trellis rewind` and `trellis checkpoints` (issue 30), run as processes with
TRELLIS_HOME and TRELLIS_CONFIG in the test's temp dir, on a session whose turns changed files
with `write_file` and `run_shell` (the scripted model plays a script file)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pexpect
import pytest

from engine.events import SessionRewind
from tests.agent.harness import CliRun, payloads, trellis_argv, trellis_env
from tests.cli.test_cli import Env, session_of, write_script


@dataclass(frozen=True, slots=True)
class Changed:
    """A stored session of two turns: 1 wrote notes.txt, 2 appended to it with a command and
    made a binary file."""

    env: Env
    id: str

    @property
    def notes(self) -> Path:
        return self.env.workspace / "notes.txt"

    @property
    def binary(self) -> Path:
        return self.env.workspace / "bin.dat"

    def run(self, *args: str) -> CliRun:
        return self.env.run(*args)

    def rewinds(self) -> list[SessionRewind]:
        return payloads(self.env.stored(self.id), SessionRewind)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = tmp_path / "config.toml"
    config.write_text("")
    return Env(home=tmp_path / "home", config=config, workspace=workspace)


@pytest.fixture
def changed(env: Env, tmp_path: Path) -> Changed:
    write: dict[str, object] = {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes.txt", "content": "one\n"}}
        ]
    }
    shell: dict[str, object] = {
        "tool_calls": [
            {
                "name": "run_shell",
                "arguments": {"command": "printf 'two\\n' >> notes.txt; printf 'x\\0y' > bin.dat"},
            }
        ]
    }
    first = write_script(tmp_path / "first.json", [write, {"text": "wrote"}])
    second = write_script(tmp_path / "second.json", [shell, {"text": "appended"}])
    done = env.run("run", "-p", "write the notes", "--script", str(first), "--allow", "write_file")
    assert done.code == 0, done.stderr
    session = session_of(done.stderr)
    done = env.run(
        "run", "--resume", session, "-p", "append", "--script", str(second), "--allow", "run_shell"
    )
    assert done.code == 0, done.stderr
    assert (env.workspace / "notes.txt").read_text() == "one\ntwo\n"
    return Changed(env, session)


def test_diff_prints_the_patch_of_every_turn_or_one(changed: Changed) -> None:
    whole = changed.run("diff", changed.id[:6])
    assert whole.code == 0, whole.stderr
    assert whole.stdout == (
        "# turn 1: 1 file +1 -0\n"
        "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+one\n"
        "# turn 2: 2 files +1 -0\n"
        "# bin.dat: added, a binary file: only its hashes are recorded\n"
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1,2 @@\n one\n+two\n"
    )
    second = changed.run("diff", changed.id, "--turn", "2")
    assert second.code == 0, second.stderr
    assert second.stdout.startswith("# turn 2: ")
    assert "+one" not in second.stdout


def test_diff_works_with_no_checkpoints_left(changed: Changed) -> None:
    """The log holds the patch: a data directory without the shadow repository prints it all."""
    for shadow in (changed.env.home / "checkpoints").iterdir():
        subprocess.run(["rm", "-rf", str(shadow)], check=True)
    done = changed.run("diff", changed.id, "--turn", "1")
    assert done.code == 0, done.stderr
    assert "+one\n" in done.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("diff", "{id}", "--turn", "9"), "--turn 9: session {id} has turns 1, 2"),
        (("diff", "nosuchid"), "no session with id 'nosuchid'"),
        (("rewind", "nosuchid", "--to", "1", "--yes"), "no session with id 'nosuchid'"),
        (("rewind", "{id}", "--to", "9", "--yes"), "cannot rewind to turn 9"),
        (("rewind", "{id}", "--to", "first", "--yes"), "expected a turn number or undo"),
        (("rewind", "{id}", "--to", "undo", "--yes"), "there is no rewind to undo"),
    ],
)
def test_a_bad_id_or_turn_is_exit_2(changed: Changed, args: tuple[str, ...], said: str) -> None:
    done = changed.run(*(a.format(id=changed.id) for a in args))
    assert done.code == 2, done.stderr
    assert said.format(id=changed.id) in done.stderr
    assert changed.rewinds() == []
    assert changed.notes.read_text() == "one\ntwo\n"


def test_rewind_puts_the_files_back_and_the_transcript_shows_it_then_undo(
    changed: Changed,
) -> None:
    done = changed.run("rewind", changed.id, "--to", "1", "--yes")
    assert done.code == 0, done.stderr
    assert "files to remove: bin.dat, notes.txt" in done.stdout
    assert "cannot be restored: the workspace's own .git" in done.stdout
    assert "rewound to before turn 1" in done.stdout
    assert "files removed: bin.dat, notes.txt" in done.stdout
    assert "conversation restored: model scripted" in done.stdout
    assert not changed.notes.exists()
    assert not changed.binary.exists()
    (rewind,) = changed.rewinds()
    assert (rewind.to_turn, rewind.conversation, rewind.code) == (1, True, True)
    shown = changed.run("show", changed.id)
    assert "Rewound to turn 1 (code and conversation)" in shown.stdout

    undone = changed.run("rewind", changed.id, "--to", "undo", "--yes")
    assert undone.code == 0, undone.stderr
    assert "undid the last rewind (to before turn 1)" in undone.stdout
    assert changed.notes.read_text() == "one\ntwo\n"
    assert changed.binary.read_bytes() == b"x\0y"
    assert [r.undoes for r in changed.rewinds()] == [None, rewind_seq(changed)]


def rewind_seq(changed: Changed) -> int:
    return next(e.seq for e in changed.env.stored(changed.id) if isinstance(e.data, SessionRewind))


def test_conversation_only_then_code_only(changed: Changed) -> None:
    talk = changed.run("rewind", changed.id, "--to", "2", "--conversation", "--yes")
    assert talk.code == 0, talk.stderr
    assert "rewind to before turn 2: the conversation\n" in talk.stdout
    assert "files written" not in talk.stdout
    assert changed.notes.read_text() == "one\ntwo\n"
    code = changed.run("rewind", changed.id, "--to", "1", "--code", "--yes")
    assert code.code == 0, code.stderr
    assert "conversation restored" not in code.stdout
    assert not changed.notes.exists()
    assert [(r.to_turn, r.conversation, r.code) for r in changed.rewinds()] == [
        (2, True, False),
        (1, False, True),
    ]


def test_a_file_changed_outside_the_agent_blocks_unless_overwrite(changed: Changed) -> None:
    changed.notes.write_text("mine\n")
    blocked = changed.run("rewind", changed.id, "--to", "2", "--yes")
    assert blocked.code == 1
    assert "changed by someone else since the agent left them: notes.txt" in blocked.stdout
    assert "changed outside the agent since it left them: notes.txt" in blocked.stderr
    # nothing written: not even the file no one else touched
    assert changed.notes.read_text() == "mine\n"
    assert changed.binary.exists()
    assert changed.rewinds() == []
    forced = changed.run("rewind", changed.id, "--to", "2", "--yes", "--overwrite")
    assert forced.code == 0, forced.stderr
    assert changed.notes.read_text() == "one\n"
    assert not changed.binary.exists()


def test_without_a_terminal_it_asks_for_yes(changed: Changed) -> None:
    env = changed.env
    done = subprocess.run(
        trellis_argv(["rewind", changed.id, "--to", "1"]),
        cwd=env.workspace,
        env=trellis_env(home=env.home, config=env.config),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "files to remove: bin.dat, notes.txt" in done.stdout  # the plan is shown first
    assert "pass --yes" in done.stderr
    assert changed.notes.exists()
    assert changed.rewinds() == []


def test_checkpoints_lists_the_sessions_and_delete_prunes_them(changed: Changed) -> None:
    listed = changed.run("checkpoints")
    assert listed.code == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith(f"{changed.env.workspace.resolve()}  ")
    assert lines[1].split() == [changed.id, "3", "checkpoints"]
    assert lines[-1].startswith("total ")
    deleted = changed.run("delete", changed.id, "--yes")
    assert deleted.code == 0, deleted.stderr
    assert "could not be pruned" not in deleted.stderr
    after = changed.run("checkpoints")
    assert changed.id not in after.stdout
    assert "no session's checkpoints (pruned)" in after.stdout


def test_on_a_terminal_it_asks_and_no_leaves_everything(changed: Changed) -> None:
    env = changed.env

    def answer(text: str) -> tuple[int, str]:
        argv = trellis_argv(["rewind", changed.id, "--to", "1"])
        child = pexpect.spawn(
            argv[0],
            argv[1:],
            cwd=str(env.workspace),
            env=trellis_env(home=env.home, config=env.config),
            encoding="utf-8",
            timeout=60,
        )
        child.expect_exact("Rewind? [y/N] ")
        child.sendline(text)
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus is not None
        return child.exitstatus, str(child.before)

    code, said = answer("n")
    assert code == 1
    assert "nothing rewound" in said
    assert changed.notes.exists()
    assert changed.rewinds() == []
    code, said = answer("y")
    assert code == 0, said
    assert "rewound to before turn 1" in said
    assert not changed.notes.exists()
