"""One connection's view of one session: the session's event stream, translated by `replay.acp`
and sent as `session/update` notifications (and, for a client that opted in, each engine event as
a `_trellis/event` notification), in log order.

A feed remembers how far it has sent, so a prompt's answer (and a permission question) waits
until every update before it is out: the client never sees an answer before the text it ends.

It takes the stream in batches (`Agent.event_batches`): each time, what happened since it last
took. A feed that keeps up gets each event as it happens and sends its updates at once; one that
fell behind (a client slower than the model) writes what waited in one go, adjacent text chunks
joined (`AcpProjection.coalesced`), so the client gets the same text in fewer messages and a
streamed delta costs the bridge one pass, not one wake-up and one write each.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from acp.schema import AgentMessageChunk, AvailableCommandsUpdate, ConfigOptionUpdate

from app.acp import rpc
from engine.events import Event, LiveEvent
from replay.acp import AcpProjection, AcpUpdate

log = logging.getLogger(__name__)

Deliver = Callable[[list[dict[str, Any]]], Awaitable[None]]
"""Sends messages on the connection, in order, none of another writer's between them."""


SessionUpdate = AgentMessageChunk | ConfigOptionUpdate | AvailableCommandsUpdate
"""The `session/update` payloads the core builds itself, as schema models (rare: one each per
opened session or command)."""

Events = Callable[[int], AsyncIterator[Sequence[Event | LiveEvent]]]
"""A session's event stream from a seq, in batches: its Agent's (`Agent.event_batches`), or for a
session another process writes, the followed replica's (`engine.replica`)."""


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
        deliver: Deliver,
        *,
        from_seq: int,
        engine_events: bool,
    ) -> None:
        self._session_id = session_id
        self._events = events
        self._projection = projection
        self._deliver = deliver
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
            async for batch in self._events(from_seq):
                messages, sent = self._messages(batch)
                if messages:
                    await self._deliver(messages)
                if sent > self.sent:
                    self.sent = sent
                    self._release()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("session %s: the feed stopped", session_id)
        finally:
            self._release(everyone=True)

    def _messages(self, batch: Sequence[Event | LiveEvent]) -> tuple[list[dict[str, Any]], int]:
        """The messages a batch makes, in order, and the seq of its last durable event (or what
        was sent before it). A client that wants engine events gets each one after its updates,
        so only the updates of one event are joined for it."""
        session_id, apply = self._session_id, self._projection.apply
        messages: list[dict[str, Any]] = []
        updates: list[AcpUpdate] = []
        sent = self.sent
        for event in batch:
            updates += apply(event)
            if self._engine_events:
                messages += self._notifications(updates)
                updates = []
                messages.append(rpc.notification("_trellis/event", event_params(session_id, event)))
            if isinstance(event, Event):
                sent = event.seq
        messages += self._notifications(updates)
        return messages, sent

    def _notifications(self, updates: list[AcpUpdate]) -> list[dict[str, Any]]:
        session_id = self._session_id
        return [
            rpc.notification("session/update", update_params(session_id, update))
            for update in self._projection.coalesced(updates)
        ]

    def _release(self, *, everyone: bool = False) -> None:
        waiting = []
        for seq, waiter in self._waiters:
            if everyone or seq <= self.sent:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                waiting.append((seq, waiter))
        self._waiters = waiting
