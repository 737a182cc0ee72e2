"""Feeding the search index off the turn's path: after a flush, once the writer has been quiet a
moment, the sessions this store flushed are indexed in small batches, each a transaction of its
own. A flush that comes meanwhile waits for one batch at most, never for the backlog.

Indexing every event as it is appended cost about ten times the append (an FTS5 insert per
event); batched after the flush it costs the turn nothing it waits for. What is left when the
store closes is indexed then; what a crashed process left, by the next one that writes the
session or by `trellis search`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress

from engine.errors import TrellisError

log = logging.getLogger(__name__)

QUIET = 0.25
"""Seconds without a flush before indexing starts."""
LONGEST_WAIT = 2.0
"""Seconds of steady flushing after which indexing starts anyway, between two flushes."""
BATCH = 256
"""Events one indexing transaction covers at most: what a flush may have to wait for."""

IndexSome = Callable[[Sequence[str] | None, int], Awaitable[int]]
"""Index up to a number of waiting events of some sessions (None: all); how many it covered."""


class BackgroundIndex:
    """The schedule of one store's index batches."""

    def __init__(self, index_some: IndexSome, *, enabled: bool = True) -> None:
        self._index_some = index_some
        self.enabled = enabled
        self._dirty: dict[str, int] = {}  # session: flushes seen, so one during a batch counts
        self._timer: asyncio.TimerHandle | None = None
        self._first_wait: float | None = None  # the first flush not indexed yet
        self._last = 0.0  # the last flush
        self._task: asyncio.Task[None] | None = None

    def flushed(self, session_ids: Sequence[str]) -> None:
        """The sessions had events stored: index them once the writer is quiet. Called on
        every flush, so it only notes the time: the timer, armed once, looks again when it
        fires."""
        if not self.enabled:
            return
        for session_id in session_ids:
            self._dirty[session_id] = self._dirty.get(session_id, 0) + 1
        loop = asyncio.get_running_loop()
        self._last = loop.time()
        if self._first_wait is None:
            self._first_wait = self._last
        if self._timer is None:
            self._timer = loop.call_later(QUIET, self._wake)

    def _wake(self) -> None:
        """Start indexing if the writer has been quiet long enough (or flushing too long);
        else look again when it will have been."""
        loop = asyncio.get_running_loop()
        assert self._first_wait is not None
        due = min(self._last + QUIET, self._first_wait + LONGEST_WAIT)
        if loop.time() < due:
            self._timer = loop.call_later(due - loop.time(), self._wake)
            return
        self._timer = None
        self._first_wait = None
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="trellis search index")

    async def _run(self) -> None:
        try:
            await self.catch_up()
        except TrellisError as exc:  # the next flush, or `trellis search`, tries again
            log.warning("search index: %s", exc)

    async def catch_up(self) -> None:
        """Index what the flushed sessions have waiting, batch by batch."""
        while self._dirty:
            seen = dict(self._dirty)
            if await self._index_some(sorted(seen), BATCH) == 0:
                for session_id, flushes in seen.items():
                    if self._dirty.get(session_id) == flushes:  # nothing flushed meanwhile
                        del self._dirty[session_id]
            await asyncio.sleep(0)  # a flush queued meanwhile goes first

    async def aclose(self) -> None:
        """Stop waiting and finish what this store flushed (called before the store closes)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
        if self.enabled:
            await self._run()
