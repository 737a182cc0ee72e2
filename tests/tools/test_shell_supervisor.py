"""The supervisor run_shell starts its command under: the command's group ends when the lifeline
(its stdin, held by Trellis alone) closes, and it refuses to run where it would signal its caller."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.tools.builtins.shell import SUPERVISOR
from tests.processes import POLL, POLLS, group_of, wait_for_pid, wait_group_gone

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads process groups from Linux /proc"
)


def supervise(command: str, cwd: Path, *, new_session: bool = True) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", "-S", str(SUPERVISOR), command],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=new_session,
    )


def outcome(process: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    """Its exit code and output, with the lifeline held open until it has exited."""
    assert process.stdout is not None
    assert process.stdin is not None
    out = process.stdout.read()
    code = process.wait(timeout=POLLS * POLL)
    process.stdin.close()
    process.stdout.close()
    return code, out


def test_the_group_ends_when_the_lifeline_closes(tmp_path: Path) -> None:
    # the background child ignores SIGTERM: only the SIGKILL that follows ends it
    command = "(trap '' TERM; sleep 600) & echo $! > child.pid; wait"
    supervisor = supervise(command, tmp_path)
    try:
        group = group_of(wait_for_pid(tmp_path / "child.pid"))
        assert group == supervisor.pid  # the supervisor leads the command's group
        assert supervisor.stdin is not None
        supervisor.stdin.close()  # what the kernel does when Trellis dies
        assert supervisor.wait(timeout=POLLS * POLL) == -signal.SIGKILL
        assert wait_group_gone(group) == []
    finally:
        if supervisor.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(supervisor.pid, signal.SIGKILL)
            supervisor.wait()


def test_it_exits_as_the_shell_did(tmp_path: Path) -> None:
    assert outcome(supervise("echo out; exit 7", tmp_path)) == (7, b"out\n")
    assert outcome(supervise("kill -QUIT $$", tmp_path)) == (-signal.SIGQUIT, b"")
    assert not list(tmp_path.glob("core*"))  # it dies of the signal without dumping core


def test_it_refuses_to_run_outside_a_group_of_its_own(tmp_path: Path) -> None:
    code, out = outcome(supervise("touch ran", tmp_path, new_session=False))
    assert code == 1
    assert b"must lead its process group" in out
    assert not (tmp_path / "ran").exists()
