"""A stored session's Agent, opened after `session/load` has answered.

Opening the Agent reads the whole log, checks it and replays it into the Context: for a long
session that costs as much as the replay the client waits for, and the client needs the Agent only
when it prompts. So `session/load` takes the writer lease (which says at once whether the session
is read-only), replays the log from the store, answers, and only then starts the opening; a prompt
that arrives before it is done waits for it, and an opening that fails is told to the client and
to every prompt. The lease taken for the opening is given back if the opening fails or is stopped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from engine.agent import Agent
from engine.errors import TrellisError

log = logging.getLogger(__name__)


class SessionOpenError(TrellisError):
    """The session's Agent could not be opened: the session is replayed, prompts are refused."""


class DeferredOpening:
    """One session's Agent: opened once `start` is called, awaited by `agent`."""

    def __init__(
        self,
        session_id: str,
        open_agent: Callable[[], Awaitable[Agent]],
        give_back: Callable[[], Awaitable[None]],
    ) -> None:
        """`open_agent` opens it (the lease already held); `give_back` returns the lease when
        the opening fails or is stopped."""
        self._session_id = session_id
        self._open_agent = open_agent
        self._give_back = give_back
        self._task: asyncio.Task[None] | None = None
        self._done: asyncio.Future[Agent | None] = asyncio.get_running_loop().create_future()
        self.failure = ""
        """Why the opening failed ("" while it has not)."""

    @property
    def started(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        """Start opening the Agent (once; later calls do nothing)."""
        if self._task is None and not self._done.done():
            self._task = asyncio.create_task(self._run(), name=f"open {self._session_id}")

    async def agent(self) -> Agent:
        """The Agent once open (starting the opening if nobody has); raises `SessionOpenError`
        when it could not be opened. Cancelling a waiter does not stop the opening."""
        self.start()
        agent = await asyncio.shield(self._done)
        if agent is None:
            raise SessionOpenError(self.failure)
        return agent

    async def stop(self) -> Agent | None:
        """Stop an opening still running (or never started), the lease given back; returns the
        Agent if it was already open, for its owner to close."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if not self._done.done():  # never started, or stopped before it ended (maybe before
            self._done.cancel()  # its first step: then `_run` did not run at all)
            await self._give_back()
        if self._done.done() and not self._done.cancelled():
            return self._done.result()
        return None

    async def _run(self) -> None:
        try:
            agent = await self._open_agent()
        except Exception as error:  # a stopped opening is `stop`'s to clean up
            self.failure = (
                f"session {self._session_id} could not be opened for prompts "
                f"({type(error).__name__}: {error}); it is shown read-only"
            )
            log.warning("%s", self.failure, exc_info=not isinstance(error, TrellisError))
            try:  # the lease is back before anyone hears of the failure (a stop waits for it)
                await asyncio.shield(self._give_back())
            finally:
                self._done.set_result(None)
            return
        self._done.set_result(agent)
