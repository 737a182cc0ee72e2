"""One client's connection on the event loop: drives the sans-I/O `AcpProtocol` for a transport
(`app.acp.transport` says what a transport gives it and takes from it).

It owns what waits: a task per request (so a long prompt never blocks a `session/cancel`), the
send lock that keeps each group of messages together, writing without waiting while the transport
can take it (`SendNow`), the futures of the requests sent to the client, and the pacing of a
`session/load`. What each request does is the handlers' (`app.acp.handlers`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from acp.exceptions import RequestError

from app.acp import rpc
from app.acp.feed import DeliverNow
from app.acp.handlers import METHODS, SessionHandlers
from app.acp.lifecycle import Answer
from app.acp.permission import answer_of, permission_request
from app.acp.protocol import AcpProtocol, CancelRequest, Notification, Request, Response
from app.acp.sessions import AcpSession
from app.acp.transport import Send, SendNow
from engine.tools.permission import PermissionAnswer, PermissionQuestion

if TYPE_CHECKING:
    from acp.schema import ClientCapabilities

    from app.acp.core import AcpServer

log = logging.getLogger(__name__)


class AcpConnection:
    """One client. `receive` takes each incoming message; what goes out goes through `send`."""

    def __init__(self, server: AcpServer, send: Send, connection_id: str) -> None:
        self.server = server
        self.id = connection_id
        self.protocol = AcpProtocol(METHODS, name=connection_id)
        self._send = send
        self._send_now = send if isinstance(send, SendNow) else None
        self._send_lock = asyncio.Lock()
        self._writers = 0  # `_flush`es holding or waiting for the send lock
        self._closed = False  # nothing more is read or written
        self._ended = False  # `aclose()` ran: the tasks are stopped and the sessions let go
        self._tasks: set[asyncio.Task[None]] = set()
        self._running: dict[rpc.RequestId, asyncio.Task[None]] = {}
        self._withdrawn: set[rpc.RequestId] = set()  # by the client (`$/cancel_request`)
        self._prompt_tasks: dict[str, set[asyncio.Task[None]]] = {}
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self.handlers = SessionHandlers(self)

    @property
    def client_capabilities(self) -> ClientCapabilities | None:
        """What the client offers (its `fs` and `terminal` are lent to the tools)."""
        return self.protocol.client_capabilities

    @property
    def wants_events(self) -> bool:
        return self.protocol.wants_events

    # --- input ---------------------------------------------------------------------------------

    async def receive(self, text: str) -> None:
        """One incoming message. Requests run in their own task; this returns at once."""
        if self._closed:
            return
        incoming = self.protocol.receive(text)
        if isinstance(incoming, Request):
            if incoming.method == "initialize":  # answered before any later message is read
                await self._answer(incoming)
                return
            self._start(incoming)
        elif isinstance(incoming, Notification):
            self.handlers.notified(incoming)
        elif isinstance(incoming, Response):
            self._answered(incoming)
        elif isinstance(incoming, CancelRequest):
            self._withdraw(incoming)
        await self._flush()  # what the protocol answered by itself

    def _start(self, request: Request) -> None:
        task = asyncio.create_task(self._answer(request), name=f"acp {self.id} {request.method}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        ident = request.id
        self._running[ident] = task

        def finished(task: asyncio.Task[None]) -> None:
            if self._running.get(ident) is task:
                del self._running[ident]
            self._withdrawn.discard(ident)

        task.add_done_callback(finished)
        if request.method == "session/prompt":
            session_id: str = request.params.session_id
            prompts = self._prompt_tasks.setdefault(session_id, set())
            prompts.add(task)

            def done(task: asyncio.Task[None]) -> None:
                prompts.discard(task)
                if not prompts and self._prompt_tasks.get(session_id) is prompts:
                    del self._prompt_tasks[session_id]

            task.add_done_callback(done)

    def _withdraw(self, cancel: CancelRequest) -> None:
        """`$/cancel_request`: a prompt's turn ends (it answers `cancelled`); any other request's
        handler is stopped and the request answered -32800."""
        if cancel.session_id is not None:
            self.handlers.cancel_prompt(cancel.session_id)
            return
        task = self._running.get(cancel.id)
        if task is not None and not task.done():
            self._withdrawn.add(cancel.id)
            task.cancel()

    async def receive_error(self, error: RequestError) -> None:
        """A message the transport could not take (over the size limit): answered with `error`
        and id null, as an unreadable message is; the connection goes on."""
        self.protocol.receive_error(error)
        await self._flush()

    async def aclose(self) -> None:
        """The transport dropped: nothing more is sent; this connection's running prompts are
        cancelled (their turns end `cancelled` and are stored) and its sessions let go."""
        if self._ended:
            return
        self._ended = self._closed = True
        self.protocol.close()
        self.handlers.cancel_prompts()
        for waiting in self._waiting.values():
            waiting.cancel()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.handlers.let_go_all()
        self.server.forget(self)

    def _answered(self, response: Response) -> None:
        waiting = self._waiting.pop(response.id, None)
        if waiting is None or waiting.done():
            return
        if response.error is not None:
            waiting.set_exception(response.error)
        else:
            waiting.set_result(response.result)

    async def prompts_answered(self, session_id: str) -> None:
        """Wait until this connection's prompts to `session_id` that arrived so far are answered."""
        running = self._prompt_tasks.get(session_id)
        if running:
            await asyncio.gather(*running, return_exceptions=True)

    # --- requests ------------------------------------------------------------------------------

    async def _answer(self, request: Request) -> None:
        """Run the request's handler and write its answer, then what follows it."""
        protocol = self.protocol
        try:
            answer = await self.handlers.handle(request)
        except asyncio.CancelledError:
            if self._closed or request.id not in self._withdrawn:
                raise
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()  # withdrawn by the client: answered, not a cancelled task
            cancelled = RequestError(
                rpc.REQUEST_CANCELLED, f"{request.method} was cancelled ($/cancel_request)"
            )
            protocol.send_error(request.id, cancelled)
            await self._flush()
            return
        except Exception as error:
            protocol.send_error(request.id, error)
            await self._flush()
            return
        result = answer.result if isinstance(answer, Answer) else answer
        protocol.send_result(request.id, result)
        if isinstance(answer, Answer):
            for method, params in answer.then:
                protocol.send_notification(method, params)
        await self._flush()
        if isinstance(answer, Answer) and answer.after is not None:
            await answer.after()

    # --- asking the client ---------------------------------------------------------------------

    async def ask_permission(
        self, session: AcpSession, question: PermissionQuestion
    ) -> PermissionAnswer:
        """`session/request_permission` for a call of the prompt this connection runs; sent
        after the call's own `tool_call` update. Cancelling it (a cancelled turn) withdraws it:
        a client that never answers does not hold the turn."""
        request = permission_request(session.id, question, session.workspace)
        params = rpc.dump(request)
        result = await self.request("session/request_permission", params, session_id=session.id)
        return answer_of(result)

    async def show_terminal(self, session_id: str, call_id: str, terminal_id: str) -> None:
        """Embed the terminal this client created for a tool call in the call's updates."""
        await self.handlers.show_terminal(session_id, call_id, terminal_id)

    async def request(self, method: str, params: Any, *, session_id: str | None = None) -> Any:
        """Ask the client and wait for its result: `RequestError` for an error answer,
        `ConnectionError` when the client is gone. With `session_id`, the session's updates so
        far go out first, so the client has a tool call before a request made for it."""
        if session_id is not None:
            await self.handlers.caught_up(session_id)
        if self._closed:
            raise ConnectionError("the client is gone")
        ident = self.protocol.send_request(method, params)
        waiting: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = waiting
        try:
            await self._flush()
            return await waiting
        finally:
            if self._waiting.pop(ident, None) is not None:
                self.protocol.withdraw(ident)

    # --- output --------------------------------------------------------------------------------

    async def notify(self, method: str, params: Any) -> None:
        self.protocol.send_notification(method, params)
        await self._flush()

    async def deliver(self, messages: list[dict[str, Any]]) -> None:
        """Send `messages` in order, none of another writer's between them."""
        self.protocol.send_messages(messages)
        await self._flush()

    def deliver_now(self) -> DeliverNow | None:
        """How a feed writes without waiting, when the transport can (`SendNow`)."""
        if self._send_now is None:
            return None
        return DeliverNow(self._ready_now, self._deliver_now)

    def _ready_now(self) -> bool:
        """Whether messages can be written at once: the transport can take them without
        waiting, and no other writer holds or waits for the send lock (they go first)."""
        now = self._send_now
        return now is not None and not self._closed and not self._writers and now.ready()

    def _deliver_now(self, messages: list[dict[str, Any]]) -> None:
        """Write `messages` at once, in order (after `_ready_now`), as `deliver` would."""
        now = self._send_now
        assert now is not None
        for text in self._while_open(self.protocol.frames(messages)):
            try:
                now.write(text)
            except Exception:
                self._refused()

    async def send_range(self, frames: list[bytes]) -> None:
        """Encoded `session/update`s of a `session/load` range (`AcpProtocol.encode_updates`),
        written at once when the transport can take them (no coroutine per frame: a range is
        thousands), else in order with every other writer; then the loop is given back, so a
        long session does not stall pings and other connections while it goes out."""
        if self._ready_now():
            now = self._send_now
            assert now is not None
            try:
                now.write_encoded(frames)
            except Exception:
                self._refused()
        else:
            await self._flush([frame.decode() for frame in frames])
        await asyncio.sleep(0)

    async def _flush(self, also: Sequence[str] = ()) -> None:
        """Write what the protocol has queued (and `also` after it) in order, none of another
        writer's between them."""
        texts = self.protocol.data_to_send()
        if also:
            texts += also
        if not texts or self._closed:
            return
        self._writers += 1
        try:
            async with self._send_lock:
                for text in self._while_open(texts):
                    try:
                        await self._send(text)
                    except Exception:
                        self._refused()
        finally:
            self._writers -= 1

    def _while_open(self, texts: list[str]) -> Iterator[str]:
        """The texts to write, until the connection closes."""
        for text in texts:
            if self._closed:
                return
            yield text

    def _refused(self) -> None:
        log.info("connection %s: the transport refused a message; closing", self.id)
        self._closed = True
        self.protocol.close()
