"""The exit codes every command shares (a closed stdout's is `app.closed_pipe`'s)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_USAGE = 2
