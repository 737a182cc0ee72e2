"""The parent of a run_shell command: it ends the command's process group when Trellis dies.

run_shell kills the group itself on a timeout or a cancelled call, but a Trellis killed outright
(`kill -9`, the out-of-memory killer) runs no code, and the command would outlive it. A parent-death
signal would reach only the direct child, and fires when the spawning thread exits, not the process.
So run_shell starts this script, as the leader of a new process group, with
`python -I -S shell_supervisor.py COMMAND`; it runs `/bin/sh -c COMMAND` in its own group and
watches its stdin, a pipe whose other end only Trellis holds. The kernel closes that end when
Trellis exits in any way; at end of file this process sends SIGTERM to the group, and SIGKILL
(itself included) `TERM_GRACE` seconds later.

When the shell exits first, this process exits the same way (its code, or its signal), so run_shell
reports the command's status as before. It is paid on every call, so it starts lean: `-S` skips
site, and it imports only modules built into the interpreter (`_signal`, the C half of `signal`:
the `signal` module adds an `enum` import that costs as much again as the rest of the start).
All its waiting happens here, not on Trellis's event loop.
"""

from __future__ import annotations

import _signal as signal  # type: ignore[import-not-found]  # no stub; see the docstring
import os
import select
import sys
import time

SHELL = "/bin/sh"
TERM_GRACE = 1.0
"""Seconds between SIGTERM and SIGKILL to the group once Trellis is gone."""
LIFELINE = 0
"""The file descriptor whose end of file means that Trellis is gone: stdin."""


def main(argv: list[str]) -> None:
    """Run the command and wait for whichever comes first: its shell's exit or Trellis's."""
    if len(argv) != 2:
        sys.exit(f"usage: {argv[0]} COMMAND (run by run_shell, stdin a pipe from Trellis)")
    if os.getpgrp() != os.getpid():
        # it signals its whole group: in Trellis's own group that would stop Trellis too
        sys.exit(f"{argv[0]}: must lead its process group (start it in a new session)")
    # A handler, so that SIGCHLD is not ignored and reaches the wake-up pipe select waits on.
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    shell = os.posix_spawn(
        SHELL,
        [SHELL, "-c", argv[1]],
        os.environ,
        file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)],
        # Python ignores these at startup; the command gets the defaults, as under subprocess.
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
    )
    while True:
        ready, _, _ = select.select([LIFELINE, wake_read], [], [])
        # Trellis gone is checked first: the shell's exit must not leave its background behind.
        if LIFELINE in ready and not os.read(LIFELINE, 512):
            _end_group()
        if wake_read in ready:
            os.read(wake_read, 512)
            done, status = os.waitpid(shell, os.WNOHANG)
            if done:
                _exit_like(status)


def _end_group() -> None:
    """SIGTERM to every process of the group, then SIGKILL, which ends this one too."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    time.sleep(TERM_GRACE)
    os.killpg(0, signal.SIGKILL)


def _exit_like(status: int) -> None:
    """Exit with the shell's code, or die of the signal that killed it (without a core dump)."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        sys.exit(code)
    import resource  # only here: most commands exit, and every import is paid per call

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if -code != signal.SIGKILL:  # the one a handler cannot be set for (SIGSTOP never ends it)
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    sys.exit(128 - code)  # a signal that does not end a process by default


if __name__ == "__main__":
    main(sys.argv)
