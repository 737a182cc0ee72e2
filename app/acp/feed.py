"""One connection's view of one session: the session's event stream, translated by `replay.acp`
and sent as `session/update` notifications (and, for a client that opted in, each engine event as
a `_trellis/event` notification), in log order.

A feed remembers how far it has sent, so a prompt's answer (and a permission question) waits
until every update before it is out: the client never sees an answer before the text it ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from acp.schema import AgentMessageChunk, AvailableCommandsUpdate, ConfigOptionUpdate

from app.acp import rpc
from engine.events import Event, LiveEvent
from replay.acp import AcpProjection, AcpUpdate

log = logging.getLogger(__name__)

Notify = Callable[[str, Any], Awaitable[None]]
"""Sends one notification (method, params) on the connection, in order."""


SessionUpdate = AgentMessageChunk | ConfigOptionUpdate | AvailableCommandsUpdate
"""The `session/update` payloads the core builds itself, as schema models (rare: one each per
opened session or command)."""

SendUpdate = Callable[[str, AcpUpdate], Awaitable[None]]
"""Sends one `session/update` (session id, payload) on the connection, in order."""

Events = Callable[[int], AsyncIterator[Event | LiveEvent]]
"""A session's event stream from a seq: its Agent's (`Agent.events`), or for a session another
process writes, the followed replica's (`engine.replica`)."""


def update_params(session_id: str, update: AcpUpdate | SessionUpdate) -> dict[str, Any]:
    """`SessionNotification` params: the session id and the payload as ACP writes it (the
    translator's updates already are; a schema model is dumped)."""
    body = update if isinstance(update, dict) else rpc.dump(update)
    return {"sessionId": session_id, "update": body}


def event_params(session_id: str, event: Event | LiveEvent) -> dict[str, Any]:
    return {"sessionId": session_id, "event": event.model_dump(mode="json")}


class Feed:
    """Follows a session's `events` from `from_seq` until stopped."""

    def __init__(
        self,
        session_id: str,
        events: Events,
        projection: AcpProjection,
        send_update: SendUpdate,
        notify: Notify,
        *,
        from_seq: int,
        engine_events: bool,
    ) -> None:
        self._session_id = session_id
        self._events = events
        self._projection = projection
        self._send_update = send_update
        self._notify = notify
        self._engine_events = engine_events
        self.sent = from_seq - 1
        """The seq of the last durable event whose updates were sent (or that had none)."""
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._task = asyncio.create_task(self._run(from_seq), name=f"acp feed {session_id}")

    async def caught_up(self, seq: int) -> None:
        """Wait until everything up to durable event `seq` was sent."""
        if self.sent >= seq or self._task.done():
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((seq, waiter))
        await waiter

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._release(everyone=True)

    async def _run(self, from_seq: int) -> None:
        session_id = self._session_id
        try:
            async for event in self._events(from_seq):
                for update in self._projection.apply(event):
                    await self._send_update(session_id, update)
                if self._engine_events:
                    await self._notify("_trellis/event", event_params(session_id, event))
                if isinstance(event, Event):
                    self.sent = event.seq
                    self._release()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("session %s: the feed stopped", session_id)
        finally:
            self._release(everyone=True)

    def _release(self, *, everyone: bool = False) -> None:
        waiting = []
        for seq, waiter in self._waiters:
            if everyone or seq <= self.sent:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                waiting.append((seq, waiter))
        self._waiters = waiting
