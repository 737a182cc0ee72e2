"""How long a run_shell command's process group outlives a Trellis killed with `kill -9`; prints JSON.

Run `python -m tests.bench.shell_kill`. A parent process starts the supervisor as run_shell does
(a new session, stdin a pipe only the parent holds) on a command with two background children,
and is then killed with SIGKILL: the kernel closes the pipe, as it does when Trellis dies. Timed
from the kill, per round: until no process of the group runs (zombies, dead and waiting to be
reaped, do not count), and until the group's last entry is reaped. Two commands: children that
take SIGTERM, and children that ignore it (only the SIGKILL after the supervisor's grace ends them).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from engine.tools.builtins.shell_supervisor import TERM_GRACE

SUPERVISOR = Path(__file__).parents[2] / "engine" / "tools" / "builtins" / "shell_supervisor.py"
ROUNDS = 5
COMMANDS = {
    "children_take_sigterm": "sleep 600 & sleep 600 & wait",
    "children_ignore_sigterm": "(trap '' TERM; sleep 600) & (trap '' TERM; sleep 600) & wait",
}
PARENT = """
import subprocess, sys, time
supervisor = subprocess.Popen(
    [sys.executable, "-I", "-S", sys.argv[1], sys.argv[2]],
    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    start_new_session=True,
)
print(supervisor.pid, flush=True)
time.sleep(600)
"""


def running(group: int) -> bool:
    """Whether a process of `group` still runs (a zombie's state is Z)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def one_round(command: str) -> tuple[float, float]:
    """Seconds from the kill until nothing of the group runs, and until it is all reaped."""
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(SUPERVISOR), command], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    group = int(parent.stdout.readline())
    time.sleep(0.3)  # the shell and its children are running
    start = time.perf_counter()
    parent.kill()
    parent.wait()
    parent.stdout.close()
    stopped: float | None = None
    while True:
        if stopped is None and not running(group):
            stopped = time.perf_counter() - start
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            reaped = time.perf_counter() - start
            return (reaped if stopped is None else stopped), reaped
        time.sleep(0.002)


def main() -> None:
    figures: dict[str, object] = {"grace_s": TERM_GRACE, "rounds": ROUNDS}
    for name, command in COMMANDS.items():
        rounds = [one_round(command) for _ in range(ROUNDS)]
        figures[name] = {
            "stopped_s": round(statistics.median(stopped for stopped, _ in rounds), 3),
            "stopped_max_s": round(max(stopped for stopped, _ in rounds), 3),
            "reaped_s": round(statistics.median(reaped for _, reaped in rounds), 3),
        }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
