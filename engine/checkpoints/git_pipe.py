"""Long-lived git processes of a store, asked one request at a time over pipes.

Starting a git process costs far more than the work a checkpoint of a few changed
files asks of it; each of these commands answers one request per line of input and flushes
the answer, so a store starts each at most once and keeps it (DESIGN-NOTES, "Checkpoints").
A process that dies, or a request cut short, ends that process: the request raises
`CheckpointError` and the next one starts a new process. Each process reads its stdin until
EOF, so one whose Trellis was killed exits with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from engine.checkpoints.shadow_repo import CheckpointError, ShadowRepo, isolated_env

log = logging.getLogger(__name__)

T = TypeVar("T")
Reader = Callable[[asyncio.StreamReader], Awaitable[T]]

STDERR_WAIT = 1.0
"""How long a dead process's last words are waited for."""


class GitPipe:
    """One long-lived `git ARGS` process in the shadow repository, started on first need."""

    def __init__(self, repo: ShadowRepo, *args: str, index: Path | None = None) -> None:
        self._repo = repo
        self.args = args
        self._index = index
        self._lock = asyncio.Lock()
        self._process: asyncio.subprocess.Process | None = None
        self._ended: list[asyncio.subprocess.Process] = []
        """Killed, and still to be waited for."""

    @property
    def pid(self) -> int | None:
        """The running process's id, None when none runs."""
        return self._process.pid if self._process is not None else None

    async def ask(self, request: bytes, read: Reader[T]) -> T:
        """Send `request`, and read its answer with `read`. A process found dead is started
        again and asked once more (every request of a store may be repeated); raises
        `CheckpointError` when the new one dies before it has answered too."""
        async with self._lock:
            retried = False
            while True:
                process = self._process or await self._start()
                assert process.stdin is not None
                assert process.stdout is not None
                try:
                    # the transport writes the request while the answer is read: a request
                    # and its answer may each be more than a pipe holds
                    process.stdin.write(request)
                    answer = await read(process.stdout)
                    await process.stdin.drain()
                    return answer
                except (ConnectionError, asyncio.IncompleteReadError, EOFError) as exc:
                    error = await self._died(process, exc)
                    if retried:
                        raise error from exc
                    retried = True
                    log.warning("%s; starting it again", error)
                except BaseException:
                    # cut short (cancelled, or an answer we cannot read): what the process
                    # says next belongs to this request, so no later one may read it
                    self._end(process)
                    raise

    async def _start(self) -> asyncio.subprocess.Process:
        repo = self._repo
        self._process = await asyncio.create_subprocess_exec(
            repo.git,
            f"--git-dir={repo.git_dir}",
            f"--work-tree={repo.workspace}",
            *self.args,
            cwd=repo.workspace,
            env=isolated_env(repo.git_dir, self._index),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return self._process

    async def _died(self, process: asyncio.subprocess.Process, exc: BaseException) -> Exception:
        self._end(process)
        err = b""
        with contextlib.suppress(Exception):
            assert process.stderr is not None
            err = await asyncio.wait_for(process.stderr.read(), STDERR_WAIT)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.wait(), STDERR_WAIT)
        code = process.returncode if process.returncode is not None else -1
        return CheckpointError(self.args, code, err or f"the process ended: {exc!r}".encode())

    def _end(self, process: asyncio.subprocess.Process) -> None:
        if self._process is process:
            self._process = None
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            self._ended.append(process)

    async def aclose(self) -> None:
        """End the process: EOF on its stdin, and a kill if it does not exit of itself."""
        async with self._lock:
            process, self._process = self._process, None
            ended, self._ended = self._ended, []
        for killed in ended:
            await killed.wait()
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), STDERR_WAIT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


async def read_line(out: asyncio.StreamReader) -> bytes:
    """One answer line, without its newline; EOF raises."""
    line = await out.readline()
    if not line.endswith(b"\n"):
        raise EOFError("no answer")
    return line[:-1]


async def read_field(out: asyncio.StreamReader) -> bytes:
    """One NUL-terminated field, without its NUL."""
    return (await out.readuntil(b"\0"))[:-1]
