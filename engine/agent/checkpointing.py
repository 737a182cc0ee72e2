"""The session's checkpoints of its workspace, taken around what may change it: before a turn's
first call that can (a write or an edit, a shell command, an MCP tool not declared read-only),
before and after each batch that holds a command or an MCP tool (their changes have no file
record), and when the turn ends. What changed goes into the log as `tool/changes` and
`turn/changes`; a rewind reads them back.

Checkpoints never end a turn: a store that cannot be opened, or fails, is said once
(`checkpoints/off`) and the session goes on without them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from engine.events import CheckpointsOff, ToolChanges, TurnChanges, WorkspaceFileChange
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.tools.tool import ToolKind, is_secret_path

if TYPE_CHECKING:
    from engine.checkpoints import CheckpointStore, FileChange, Unavailable
    from engine.session import Session
    from engine.tools.tool import Tool

log = logging.getLogger(__name__)

StoreOpener = Callable[[], Awaitable["CheckpointStore | Unavailable"]]


def changes_workspace(tool: Tool[Any] | None) -> bool:
    """Whether a call of `tool` may change the workspace (`Tool.may_change_workspace`)."""
    return tool is not None and tool.may_change_workspace


def unrecorded(tool: Tool[Any] | None) -> bool:
    """A call whose changes no file record describes: a command or another program's tool."""
    return tool is not None and tool.may_change_workspace and tool.kind is not ToolKind.edit


def file_change(change: FileChange, secret_patterns: Sequence[str]) -> WorkspaceFileChange:
    """The log's form of a store's `FileChange`, labelled as a read of the file would be."""
    secret = is_secret_path(change.path, secret_patterns)
    label = PrivatizationLabel.of(
        PrivacyClass.restricted if secret else PrivacyClass.internal, change.path
    )
    return WorkspaceFileChange(**dataclasses.asdict(change), label=label)


class Checkpointing:
    """One session's checkpoint-taking; `opener` opens the store on first need, so a session
    that never changes its workspace never pays for it (None: the session keeps none)."""

    def __init__(
        self, session: Session, opener: StoreOpener | None, secret_patterns: Sequence[str]
    ) -> None:
        self._session = session
        self._opener = opener
        self._secret_patterns = tuple(secret_patterns)
        self._store: CheckpointStore | None = None
        self._dropped: list[CheckpointStore] = []
        self._off = opener is None
        self._turn: int | None = None
        self._turn_before: str | None = None
        self.why_off: str | None = None if opener is not None else "the session is not stored"
        """Why the session takes no checkpoints, once it is known."""

    async def store(self) -> CheckpointStore | None:
        """The open store, or None when the session keeps no checkpoints (said once)."""
        if self._store is not None or self._off:
            return self._store
        assert self._opener is not None
        from engine.checkpoints import CheckpointError, Unavailable

        try:
            opened = await self._opener()
        except (CheckpointError, OSError, ValueError) as exc:
            opened = Unavailable(f"checkpoints could not start: {exc}")
        if isinstance(opened, Unavailable):
            self._give_up(opened.reason)
            return None
        self._store = opened
        return opened

    def _give_up(self, reason: str) -> None:
        self._off = True
        self.why_off = reason
        if self._store is not None:
            self._dropped.append(self._store)
        self._store = None
        self._session.append(CheckpointsOff(reason=reason))

    async def aclose(self) -> None:
        """End the git processes of the store (and of one given up on); a closed session's
        checkpoints leave nothing running."""
        stores = [*self._dropped, *([self._store] if self._store is not None else [])]
        self._dropped = []
        for store in stores:
            await store.aclose()

    async def _take(self, reason: str) -> str | None:
        store = await self.store()
        if store is None:
            return None
        from engine.checkpoints import CheckpointError, CheckpointsOffError

        try:
            return (await store.take(reason)).id
        except CheckpointsOffError as exc:
            self._give_up(exc.unavailable.reason)
        except (CheckpointError, OSError) as exc:
            log.warning("checkpoint of %s failed: %s", store.workspace, exc)
            self._give_up(f"a checkpoint failed, so none are taken from here on: {exc}")
        return None

    async def _files(self, before: str, after: str) -> tuple[WorkspaceFileChange, ...] | None:
        store = self._store
        if store is None:
            return None
        from engine.checkpoints import CheckpointError

        try:
            found = await store.changes(before, after)
        except (CheckpointError, OSError) as exc:
            log.warning("changes of %s failed: %s", store.workspace, exc)
            self._give_up(f"reading what a turn changed failed: {exc}")
            return None
        return tuple(file_change(change, self._secret_patterns) for change in found)

    async def before_batch(self, turn: int, tools: Sequence[Tool[Any] | None]) -> str | None:
        """Before a batch of calls runs: the turn's first checkpoint if one of them may change
        the workspace, and one just before the batch when a call's changes have no file record
        (its id returned, for `after_batch`)."""
        if self._off or not any(changes_workspace(tool) for tool in tools):
            return None
        if self._turn != turn:
            self._turn, self._turn_before = turn, None
        if self._turn_before is None:
            self._turn_before = await self._take(f"before turn {turn}")
            if not any(unrecorded(tool) for tool in tools):
                return None
            return self._turn_before
        if not any(unrecorded(tool) for tool in tools):
            return None
        return await self._take(f"before a command of turn {turn}")

    async def after_batch(
        self, turn: int, step: int, call_ids: Sequence[str], before: str | None
    ) -> ToolChanges | None:
        """What the batch that started at checkpoint `before` changed, for `tool/changes`."""
        if before is None:
            return None
        since = await self._since(before, f"after a command of turn {turn}")
        if since is None:
            return None
        after, files = since
        ids = tuple(call_ids)
        return ToolChanges(
            turn=turn, step=step, call_ids=ids, before=before, after=after, files=files
        )

    async def end_turn(self, turn: int) -> TurnChanges | None:
        """What turn `turn` changed, when it took a checkpoint: for `turn/changes`."""
        before = self._turn_before if self._turn == turn else None
        self._turn, self._turn_before = None, None
        if before is None:
            return None
        since = await self._since(before, f"after turn {turn}")
        if since is None:
            return None
        after, files = since
        return TurnChanges(turn=turn, before=before, after=after, files=files)

    async def _since(
        self, before: str, reason: str
    ) -> tuple[str, tuple[WorkspaceFileChange, ...]] | None:
        """A checkpoint now, and the files changed since `before`; None without one."""
        if self._off:
            return None
        after = await self._take(reason)
        if after is None:
            return None
        files = await self._files(before, after)
        return None if files is None else (after, files)
