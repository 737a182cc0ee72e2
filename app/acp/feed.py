"""One connection's view of one session: the session's event stream, translated by `replay.acp`
and sent as `session/update` notifications (and, for a client that opted in, each engine event as
a `_trellis/event` notification), in log order.

A feed remembers how far it has sent, so a prompt's answer (and a permission question) waits
until every update before it is out: the client never sees an answer before the text it ends.

It takes the stream in batches (`Agent.event_batches`): each time, what happened since it last
took. A feed that keeps up gets each event as it happens and sends its updates at once; one that
fell behind (a client slower than the model) writes what waited in one go, adjacent text chunks
joined (`AcpProjection.coalesced`), so the client gets the same text in fewer messages and a
streamed delta costs the bridge one pass, not one wake-up and one write each. While it waits
with nothing queued, each event is offered to it as it happens (`Immediate`): when the connection
can take messages at once (`DeliverNow`), they are written there and then, inside the append, so
a feed that keeps up costs no wake-up of its task per delta either.

A write or an edit is shown as the whole file before and after as soon as it is called: the feed
reads the file from the disk in a worker thread (`file_change`, what the console's permission
dialog shows) and sends that diff before it counts the call as sent, so a permission question
about the call reaches the client after it. A call's record replaces it once the call ran.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
)

from app.acp import rpc
from engine.events import Event, LiveEvent, ToolCallRecord
from engine.session import Immediate
from engine.tools.builtins.file_change import FileChange, file_change
from engine.tools.tool import DEFAULT_SECRET_PATTERNS, is_secret_path
from replay.acp import AcpProjection, AcpUpdate

log = logging.getLogger(__name__)

Deliver = Callable[[list[dict[str, Any]]], Awaitable[None]]
"""Sends messages on the connection, in order, none of another writer's between them."""


PREVIEWED = frozenset(("write_file", "edit_file"))
"""The tools whose change the feed shows from the disk before they run."""

SessionUpdate = AgentMessageChunk | ConfigOptionUpdate | AvailableCommandsUpdate | CurrentModeUpdate
"""The `session/update` payloads the core builds itself, as schema models (rare: one each per
opened session or command)."""

Events = Callable[[int, Immediate], AsyncIterator[Sequence[Event | LiveEvent]]]
"""A session's event stream from a seq, in batches, offering each event to the `Immediate` while
the feed waits: its Agent's (`Agent.event_batches`), or for a session another process writes, the
followed replica's (`engine.replica`)."""


@dataclass(frozen=True, slots=True)
class DeliverNow:
    """A connection's way to write without waiting: `ready()` says whether it can take messages
    at once (its transport below its high-water mark, no other writer between two of its
    messages); then `deliver` writes them, in order."""

    ready: Callable[[], bool]
    deliver: Callable[[list[dict[str, Any]]], None]


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
        deliver_now: DeliverNow | None = None,
        secret_patterns: Callable[[], Sequence[str]] = lambda: DEFAULT_SECRET_PATTERNS,
    ) -> None:
        self._session_id = session_id
        self._events = events
        self._projection = projection
        self._deliver = deliver
        self._deliver_now = deliver_now
        self._engine_events = engine_events
        self._secret_patterns = secret_patterns
        """The session's secret patterns now: a secret file's text is not previewed."""
        self._stopped = False
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

    async def aclose(self) -> None:
        self._stopped = True
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._release(everyone=True)

    async def _run(self, from_seq: int) -> None:
        session_id = self._session_id
        try:
            async for batch in self._events(from_seq, self._now):
                messages, sent = self._messages(batch)
                if messages:
                    await self._deliver(messages)
                previews = await self._previews(batch)
                if previews:
                    await self._deliver(previews)
                self._sent(sent)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("session %s: the feed stopped", session_id)
        finally:
            self._release(everyone=True)

    def _now(self, event: Event | LiveEvent) -> bool:
        """An event that comes while the feed waits with nothing queued: its messages written
        at once, inside the append, when the connection can take them without waiting; False
        leaves it to the next batch. A streamed delta then costs no wake-up of the feed's task
        and no turn of the loop."""
        now = self._deliver_now
        if self._stopped:
            return True  # stopping: nothing more goes out
        if now is None or not now.ready():
            return False
        if type(event.data) is ToolCallRecord and self._previewed(event) is not None:
            return False  # a previewed call reads the disk: in the feed's task
        try:
            messages, sent = self._messages((event,))
            if messages:
                now.deliver(messages)
        except Exception:
            log.exception("session %s: the feed stopped", self._session_id)
            self._stopped = True
            self._task.cancel()
            self._release(everyone=True)
            return True
        self._sent(sent)
        return True

    async def show_terminal(self, call_id: str, terminal_id: str) -> None:
        """The call runs in this client's terminal `terminal_id`: the call's updates embed it
        from now on (`AcpProjection.show_terminal`)."""
        update = self._projection.show_terminal(call_id, terminal_id)
        if update is not None:
            await self._deliver(self._notifications([update]))

    def _previewed(self, event: Event | LiveEvent) -> ToolCallRecord | None:
        """The call `event` makes whose change is previewed, if any (live only: a replayed or
        followed log is history, and the disk has moved on since)."""
        data = event.data
        if type(data) is not ToolCallRecord or self._projection.replaying:
            return None
        call: ToolCallRecord = data
        return call if call.name in PREVIEWED else None

    async def _previews(self, batch: Sequence[Event | LiveEvent]) -> list[dict[str, Any]]:
        """The whole-file diffs of the writes and edits the batch calls, read from the disk."""
        projection = self._projection
        messages: list[dict[str, Any]] = []
        for event in batch:
            call = self._previewed(event)
            if call is None:
                continue
            root = Path(projection.workspace)
            change = await asyncio.to_thread(file_change, root, call.name, call.arguments)
            if not isinstance(change, FileChange) or change.before == change.after:
                continue  # nothing to show, or the call already ran
            if is_secret_path(change.path, self._secret_patterns()):
                continue  # as the call's record keeps only hashes, no text goes out
            update = projection.preview(call.call_id, change.path, change.before, change.after)
            if update is not None:
                messages += self._notifications([update])
        return messages

    def _sent(self, seq: int) -> None:
        if seq > self.sent:
            self.sent = seq
            self._release()

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
