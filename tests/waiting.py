"""Waiting in a test for what happens asynchronously: one bound on a hung test, by the clock.

A deadline, not a count of pauses: on a loaded machine a hundred pauses pass in less time than
the frames, threads or processes being waited for take. The bound fails a broken condition
instead of hanging; it is never a timing assertion (those live in `tests/bench/`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual.pilot import Pilot

BOUND = 30.0
"""Seconds before a condition that never holds fails the test (a process under load is slow)."""

PAUSE = 0.01
"""The longest pause between polls: the first polls only yield, then the pause grows to this."""


async def until(
    condition: Callable[[], object], message: str, *, pilot: Pilot[None] | None = None
) -> None:
    """Wait until `condition()` holds, failing with `message` after `BOUND` seconds.

    With `pilot`, each pause is the Pilot's, which also lets the screen handle its messages.
    """
    deadline = time.monotonic() + BOUND
    pause = 0.0
    while time.monotonic() < deadline:
        if condition():
            return
        if pilot is not None:
            await pilot.pause(pause or 0.001)
        else:
            await asyncio.sleep(pause)
        pause = min(PAUSE, pause * 2 or 0.0005)
    assert condition(), f"never: {message}"
