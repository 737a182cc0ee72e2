"""A reader that stops reading (`trellis sessions | head -3`): the command ends quietly.

Python turns the closed pipe into `BrokenPipeError` on the next write, and again when it flushes
stdout at exit; a command that leaves a traceback there reads as a crash. Trellis ends as Unix
tools do when SIGPIPE stops them (git, coreutils): no message, exit status 128 + SIGPIPE.
"""

from __future__ import annotations

import os
import sys

EXIT_READER_GONE = 128 + 13
"""What a shell shows for a program SIGPIPE ended; `set -o pipefail` sees it as such."""


def quiet_stdout() -> None:
    """Send whatever stdout still holds, and all later writes, to the null device, so that
    neither a later write nor the flush at exit raises again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
