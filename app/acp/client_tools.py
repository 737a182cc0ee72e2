"""The client's files and terminal lent to the tools (`engine.tools.front_end`), when its
`clientCapabilities` offer them: `fs/read_text_file` and `fs/write_text_file` (the editor's unsaved
buffers), `terminal/*` for `run_shell`.

The connection whose prompt runs lends them (`AcpSession.prompting`, as it answers permission),
asked once per tool call as the call starts, so a call keeps its client to the end even if the turn
ends first. The tools keep every guard in front of the loan; the log holds the same events as for
local tools, so a replay cannot tell them apart.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from acp.exceptions import RequestError
from acp.schema import (
    ClientCapabilities,
    CreateTerminalRequest,
    CreateTerminalResponse,
    KillTerminalRequest,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    TerminalOutputRequest,
    TerminalOutputResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
)
from pydantic import BaseModel, ValidationError

from app.acp import rpc
from engine.tools.front_end import (
    LOCAL,
    CommandOutcome,
    CommandRun,
    FrontEndAccess,
    FrontEndError,
)

log = logging.getLogger(__name__)

SHELL = "/bin/sh"
"""What the client's terminal runs: `SHELL -c COMMAND`, as run_shell does locally."""
OUTPUT_POLL = 0.5
"""Seconds between `terminal/output` reads while a command runs (its live `tool/output`)."""
ANSWER_GRACE = 5.0
"""Seconds the client has to answer a request that asks no work of it (`terminal/output`,
`terminal/kill`, `terminal/release`): a client that never answers does not hold the call."""

ModelT = TypeVar("ModelT", bound=BaseModel)
SessionRequest = (
    ReadTextFileRequest
    | WriteTextFileRequest
    | CreateTerminalRequest
    | TerminalOutputRequest
    | WaitForTerminalExitRequest
    | KillTerminalRequest
    | ReleaseTerminalRequest
)
"""The requests the lent tools send, each for one session."""

_ENDING: set[asyncio.Future[None]] = set()
"""The releases still waiting for the client's answer, held so they run to their end."""


def _hold(ending: asyncio.Future[None]) -> asyncio.Future[None]:
    _ENDING.add(ending)
    ending.add_done_callback(_ENDING.discard)
    return ending


class ClientPeer(Protocol):
    """The connection, as the lent tools use it (`app.acp.connection.AcpConnection`)."""

    client_capabilities: ClientCapabilities | None

    async def request(self, method: str, params: Any, *, session_id: str | None = None) -> Any:
        """Send a request to the client, after the updates of `session_id` so far, and wait for
        its result; raises `RequestError` for an error answer and `ConnectionError` when the
        client is gone."""
        ...

    async def show_terminal(self, session_id: str, call_id: str, terminal_id: str) -> None:
        """Show the client the terminal it created for the tool call `call_id`, in that call's
        updates (ACP's terminal content)."""
        ...


def lent_by(peer: ClientPeer | None, session_id: str) -> FrontEndAccess:
    """What `peer` (the connection whose prompt runs, if any) lends a tool call of `session_id`:
    each file operation and the terminal only where its capabilities offer them."""
    capabilities = peer.client_capabilities if peer is not None else None
    if peer is None or capabilities is None:
        return LOCAL
    fs = capabilities.fs
    files = ClientFiles(peer, session_id)
    return FrontEndAccess(
        reader=files if fs is not None and fs.read_text_file else None,
        writer=files if fs is not None and fs.write_text_file else None,
        terminal=ClientTerminal(peer, session_id) if capabilities.terminal else None,
    )


async def _call(
    peer: ClientPeer,
    method: str,
    request: SessionRequest,
    answer: type[ModelT],
    *,
    within: float | None = None,
) -> ModelT:
    """`method` with `request` as its params (after the session's updates so far: the client
    sees the tool call first), its result parsed as `answer`; every way it can fail (an error
    answer, an invalid one, none `within` seconds, the client gone) is a `FrontEndError` saying
    what the client did."""
    try:
        async with asyncio.timeout(within):
            params = rpc.dump(request)
            result = await peer.request(method, params, session_id=request.session_id)
    except RequestError as error:
        raise FrontEndError(
            f"the client answered {method} with error {error.code}: {error}"
        ) from None
    except ConnectionError:
        raise FrontEndError(f"the client went away before answering {method}") from None
    except TimeoutError:
        if within is None:  # not this call's own limit
            raise
        raise FrontEndError(f"the client did not answer {method} within {within:g} s") from None
    try:
        return answer.model_validate(result if result is not None else {})
    except ValidationError as error:
        raise FrontEndError(
            f"the client's answer to {method} does not fit its schema ({rpc.invalid_params(error)})"
        ) from None


@dataclass(frozen=True, slots=True)
class ClientFiles:
    """The editor's view of the workspace's text files, unsaved buffers included."""

    peer: ClientPeer
    session_id: str

    async def read_text(self, path: Path) -> str:
        request = ReadTextFileRequest(session_id=self.session_id, path=str(path))
        response = await _call(self.peer, "fs/read_text_file", request, ReadTextFileResponse)
        return response.content

    async def write_text(self, path: Path, content: str) -> None:
        request = WriteTextFileRequest(session_id=self.session_id, path=str(path), content=content)
        await _call(self.peer, "fs/write_text_file", request, _Empty)


class _Empty(BaseModel):
    """An answer with nothing in it that matters (`{}` or `null`; `_meta` is ignored)."""


@dataclass(frozen=True, slots=True)
class ClientTerminal:
    """`run_shell` in a terminal of the client's: created, read while it runs, waited for,
    killed at the timeout or when the call is cancelled, and always released."""

    peer: ClientPeer
    session_id: str

    async def run(self, run: CommandRun) -> CommandOutcome:
        """The command's timeout runs from `terminal/create` on: a client that does not create
        the terminal in that time fails the call."""
        deadline = asyncio.get_running_loop().time() + run.timeout
        create = CreateTerminalRequest(
            session_id=self.session_id,
            command=SHELL,
            args=["-c", run.command],
            cwd=str(run.cwd),
            output_byte_limit=run.output_limit,
        )
        creating = asyncio.ensure_future(
            _call(self.peer, "terminal/create", create, CreateTerminalResponse)
        )
        try:
            async with asyncio.timeout_at(deadline):
                created = await asyncio.shield(creating)
        except (asyncio.CancelledError, TimeoutError) as stopped:
            # the client may still create it: then it is killed and released at once
            creating.add_done_callback(self._end_unused)
            if isinstance(stopped, TimeoutError):
                raise FrontEndError(
                    f"the client did not answer terminal/create within {run.timeout:g} s"
                ) from None
            raise
        terminal = _Terminal(self.peer, self.session_id, created.terminal_id)
        live = _Live(run)
        try:
            if run.call_id:
                await self.peer.show_terminal(self.session_id, run.call_id, created.terminal_id)
            exited = await terminal.wait(deadline, live)
            if exited is None:
                await terminal.kill()
            final = await terminal.output()
        except BaseException:
            # cancelled or failed: the command must not go on in the editor
            await terminal.end(kill=True)
            raise
        await terminal.end(kill=False)
        live.feed(final.output, final=True)
        return _outcome(final, exited, run.output_limit)

    def _end_unused(self, creating: asyncio.Future[CreateTerminalResponse]) -> None:
        """A terminal created after its call was cancelled: killed and released unwatched."""
        if creating.cancelled() or creating.exception() is not None:
            return
        terminal = _Terminal(self.peer, self.session_id, creating.result().terminal_id)
        _hold(asyncio.ensure_future(terminal.end(kill=True)))


@dataclass(slots=True)
class _Live:
    """Passes the output of a running command on as it grows, complete lines at a time."""

    run: CommandRun
    sent: str = ""
    lost: bool = False
    """The terminal dropped the output's beginning (its byte limit): where new text starts is
    unknown, so nothing more is passed on live; the result still holds the output."""

    def feed(self, output: str, *, final: bool = False) -> None:
        if self.run.on_output is None or self.lost:
            return
        if not output.startswith(self.sent):
            self.lost = True
            return
        end = len(output) if final else output.rfind("\n") + 1
        if end > len(self.sent):
            self.run.on_output(output[len(self.sent) : end])
            self.sent = output[:end]


@dataclass(slots=True)
class _Terminal:
    """One terminal the client created for a call; `end` releases it exactly once."""

    peer: ClientPeer
    session_id: str
    terminal_id: str
    released: bool = False

    async def wait(self, deadline: float, live: _Live) -> WaitForTerminalExitResponse | None:
        """How the command exited, or None if it had not by `deadline` (the loop's clock); its
        output is read every `OUTPUT_POLL` seconds meanwhile and passed on."""
        request = WaitForTerminalExitRequest(**self._ids())
        exiting = asyncio.ensure_future(
            _call(self.peer, "terminal/wait_for_exit", request, WaitForTerminalExitResponse)
        )
        try:
            async with asyncio.timeout_at(deadline):
                while not (await asyncio.wait({exiting}, timeout=OUTPUT_POLL))[0]:
                    if live.run.on_output is not None and not live.lost:
                        live.feed((await self.output()).output)
        except TimeoutError:
            return None
        finally:
            exiting.cancel()
        return exiting.result()  # a client error while waiting is the call's error

    async def output(self) -> TerminalOutputResponse:
        request = TerminalOutputRequest(**self._ids())
        return await _call(
            self.peer, "terminal/output", request, TerminalOutputResponse, within=ANSWER_GRACE
        )

    async def kill(self) -> None:
        request = KillTerminalRequest(**self._ids())
        await _call(self.peer, "terminal/kill", request, _Empty, within=ANSWER_GRACE)

    async def end(self, *, kill: bool) -> None:
        """Release the terminal (after killing its command if `kill`), in a task of its own, so
        a second cancellation of the call cannot stop it halfway."""
        if self.released:
            return
        self.released = True
        await asyncio.shield(_hold(asyncio.ensure_future(self._end(kill))))

    async def _end(self, kill: bool) -> None:
        requests: list[tuple[str, SessionRequest]] = []
        if kill:
            requests.append(("terminal/kill", KillTerminalRequest(**self._ids())))
        requests.append(("terminal/release", ReleaseTerminalRequest(**self._ids())))
        for method, request in requests:  # released even when the kill failed
            try:
                await _call(self.peer, method, request, _Empty, within=ANSWER_GRACE)
            except FrontEndError as error:
                log.info("terminal %s: %s", self.terminal_id, error)

    def _ids(self) -> dict[str, str]:
        return {"session_id": self.session_id, "terminal_id": self.terminal_id}


def _outcome(
    final: TerminalOutputResponse, exited: WaitForTerminalExitResponse | None, limit: int
) -> CommandOutcome:
    """The command's end as run_shell reports it, its output bounded as the local shell's is."""
    output, cut = final.output, final.truncated
    if len(output) > limit:  # a client that kept more than it was asked to
        output, cut = output[len(output) - limit :], True
    if cut:
        output = (
            f"[output truncated: the terminal kept only its last {len(output)} characters]\n"
            + output
        )
    if exited is None:
        return CommandOutcome(output=output, timed_out=True)
    return CommandOutcome(output=output, exit_code=exited.exit_code, signal=exited.signal)
