"""The shadow repository: a bare git repository per workspace under the data directory, driven
by the `git` binary and isolated from everything the user set up for their own repositories.

The user's global and system config, hooks, filters, attributes, line-ending conversion and
excludes never apply: the environment drops every inherited `GIT_*` variable and points the
global config at /dev/null, the repository's own config (`trellis.config`, rewritten on each
open) pins `core.*`, and `info/attributes` unsets every attribute the work tree's
`.gitattributes` could set. Git never looks inside the work tree's own `.git`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from engine.errors import TrellisError

SHADOW_DIR_NAME = "checkpoints"
"""The folder of shadow repositories in the data directory."""
WORKSPACE_FILE = "trellis-workspace"
"""In a shadow repository: the workspace it keeps, for listings of the disk used."""
LOCK_FILE = "trellis.lock"

AUTHOR = ("Trellis checkpoints", "checkpoints@trellis.invalid")

REPO_CONFIG = """\
[core]
\tautocrlf = false
\tsafecrlf = false
\thooksPath = /dev/null
\tfsmonitor = false
\tsymlinks = true
\tquotepath = false
\tattributesFile = /dev/null
\texcludesFile = /dev/null
\tlogAllRefUpdates = false
[status]
\trelativePaths = false
\tshowUntrackedFiles = all
[gc]
\tauto = 0
[maintenance]
\tauto = false
[commit]
\tgpgsign = false
"""
"""Pinned so that nothing the user's git would do by default (or a future default) applies."""

ATTRIBUTES = "* -text -eol -filter -ident -diff -merge -working-tree-encoding\n"
"""`info/attributes` outranks every `.gitattributes` in the work tree: bytes stay bytes."""


class CheckpointError(TrellisError):
    """A git command of the shadow repository failed; the message names it and what git said."""

    def __init__(self, command: Sequence[str], code: int, stderr: bytes) -> None:
        self.command = tuple(command)
        self.code = code
        self.stderr = stderr.decode("utf-8", "replace").strip()
        super().__init__(f"git {' '.join(self.command[:2])} failed ({code}): {self.stderr}")


def git_binary() -> str | None:
    """The `git` executable on PATH, None when there is none."""
    return shutil.which("git")


def shadow_dir_for(data_dir: Path, workspace: Path) -> Path:
    """Where the shadow repository of `workspace` (resolved) lives: one per workspace path."""
    digest = hashlib.sha256(os.fsencode(workspace)).hexdigest()[:16]
    return data_dir / SHADOW_DIR_NAME / f"{digest}.git"


def isolated_env(git_dir: Path, index: Path | None = None) -> dict[str, str]:
    """This process's environment without the user's git setup: no inherited `GIT_*`, no global
    or system config, messages in the C locale, and (when given) the session's own index.
    `HOME` and `XDG_CONFIG_HOME` point into the shadow repository too, where no config is, so a
    git older than `GIT_CONFIG_GLOBAL` (2.32) reads no user file either."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_AUTHOR_NAME=AUTHOR[0],
        GIT_AUTHOR_EMAIL=AUTHOR[1],
        GIT_COMMITTER_NAME=AUTHOR[0],
        GIT_COMMITTER_EMAIL=AUTHOR[1],
        HOME=str(git_dir),
        XDG_CONFIG_HOME=str(git_dir / "no-user-config"),
        LC_ALL="C",
    )
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return env


@dataclass(frozen=True, slots=True)
class ShadowRepo:
    """One workspace's shadow repository and how to run git in it."""

    git: str
    git_dir: Path
    workspace: Path

    def prepare(self) -> None:
        """Create the repository if needed and (re)write what isolates it. Blocking: call it
        from a worker thread."""
        if not (self.git_dir / "HEAD").exists():
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(
                [self.git, "init", "--quiet", "--bare", str(self.git_dir)],
                env=isolated_env(self.git_dir),
                capture_output=True,
                check=False,
            )
            if done.returncode != 0:
                raise CheckpointError(("init", "--bare"), done.returncode, done.stderr)
        config = self.git_dir / "config"
        include = "[include]\n\tpath = trellis.config\n"
        if include not in config.read_text("utf-8"):
            with config.open("a", encoding="utf-8") as out:
                out.write(include)
        _write_if_changed(self.git_dir / "trellis.config", REPO_CONFIG)
        _write_if_changed(self.git_dir / "info" / "attributes", ATTRIBUTES)
        _write_if_changed(self.git_dir / WORKSPACE_FILE, os.fsdecode(self.workspace) + "\n")

    def write_excludes(self, text: str) -> None:
        """The patterns left out beside the work tree's `.gitignore` files. Blocking."""
        _write_if_changed(self.git_dir / "info" / "exclude", text)

    async def run(
        self,
        *args: str,
        index: Path | None = None,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        ok_codes: tuple[int, ...] = (0,),
    ) -> bytes:
        """Run `git ARGS` in the work tree with this repository; its stdout. Raises
        `CheckpointError` on an exit code not in `ok_codes`.

        Cancelled, it stops git with SIGTERM (on which git removes its lock files) and waits
        for it to exit, so the next command never meets a lock of this one; the start itself is
        never cut short (asyncio would SIGKILL a process whose start was cancelled)."""
        started: asyncio.Future[asyncio.subprocess.Process | None] = (
            asyncio.get_running_loop().create_future()
        )
        job = asyncio.ensure_future(self._run(args, index, stdin, env or {}, started))
        try:
            out, err, code = await asyncio.shield(job)
        except asyncio.CancelledError:
            await asyncio.shield(_stop(started, job))
            raise
        if code not in ok_codes:
            raise CheckpointError(args, code, err)
        return out

    async def _run(
        self,
        args: tuple[str, ...],
        index: Path | None,
        stdin: bytes | None,
        env: dict[str, str],
        started: asyncio.Future[asyncio.subprocess.Process | None],
    ) -> tuple[bytes, bytes, int]:
        try:
            process = await asyncio.create_subprocess_exec(
                self.git,
                f"--git-dir={self.git_dir}",
                f"--work-tree={self.workspace}",
                *args,
                cwd=self.workspace,
                env={**isolated_env(self.git_dir, index), **env},
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except BaseException:
            started.set_result(None)
            raise
        started.set_result(process)
        out, err = await process.communicate(stdin)
        return out, err, process.returncode if process.returncode is not None else -1

    @asynccontextmanager
    async def locked(self, *, exclusive: bool) -> AsyncIterator[None]:
        """Checkpoints and restores share the repository; pruning objects takes it alone, so
        it never removes a blob another session staged but has not committed yet."""
        import fcntl  # POSIX only; a store is never opened elsewhere (`RESTORE_SUPPORTED`)

        fd = os.open(self.git_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            # a free lock is taken at once; only a wait is worth a worker thread
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            waiting = asyncio.ensure_future(asyncio.to_thread(fcntl.flock, fd, mode))
            try:
                await asyncio.shield(waiting)
            except BaseException:
                # the thread still waits on the descriptor: close it only once the wait is
                # over, so its number is never reused under a pending lock
                waiting.add_done_callback(lambda _: os.close(fd))
                raise
        except BaseException:
            os.close(fd)
            raise
        try:
            yield
        finally:
            os.close(fd)


async def _stop(
    started: asyncio.Future[asyncio.subprocess.Process | None],
    job: asyncio.Future[tuple[bytes, bytes, int]],
) -> None:
    process = await started
    if process is not None and process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
    with contextlib.suppress(Exception):
        await job


def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.read_text("utf-8", "surrogateescape") == text:
            return
    except FileNotFoundError:
        pass
    path.write_text(text, "utf-8", "surrogateescape")
