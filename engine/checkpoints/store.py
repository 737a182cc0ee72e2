"""`CheckpointStore`: one session's checkpoints of its workspace, in the workspace's shadow
repository (`engine.checkpoints.shadow_repo`).

A checkpoint is a commit of the work tree, kept alive by `refs/trellis/<session>/<n>`. Each
session has its own index (`index-<session>`), so two sessions in one workspace never share
one, and its stat cache makes a checkpoint by status cost what changed: one `git status` pass,
then `update-index` for the changed paths only, `write-tree`, a commit and one ref update. With
the change journal (`engine.checkpoints.journal`) a checkpoint looks only at the paths inotify
saw change and rewrites the trees on them, and starts no process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from engine.checkpoints.changes import SYMLINK_MODE, FileChange, changes_between, sides_between
from engine.checkpoints.checkpoint import (
    Checkpoint,
    CheckpointsOffError,
    SkippedFile,
    Unavailable,
    commit_message,
)
from engine.checkpoints.journal import (
    FEW,
    FEW_BYTES,
    ChangeJournal,
    Doubt,
    Noted,
    contents,
    look,
)
from engine.checkpoints.large_files import LargeFileLedger
from engine.checkpoints.objects import Entry, GitObjects, object_id
from engine.checkpoints.restore import (
    RESTORE_SUPPORTED,
    PathNote,
    RestorePlan,
    RestoreResult,
    apply_plan,
    make_plan,
    outside_links,
)
from engine.checkpoints.settings import anchored_pattern, exclude_text, refused_workspace
from engine.checkpoints.shadow_repo import (
    AUTHOR,
    CheckpointError,
    ShadowRepo,
    git_binary,
    shadow_dir_for,
)
from engine.checkpoints.status import STATUS_ARGS, parse_status, sort_entries
from engine.checkpoints.trees import EMPTY, FRESH, Edit, edit_tree, has_path
from engine.checkpoints.workspace_size import WorkspaceSize
from engine.config import CheckpointsConfig
from engine.errors import TrellisError
from engine.os_text import escape_os_text

log = logging.getLogger(__name__)

REF_ROOT = "refs/trellis"
COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
STALE_LOCK_SECONDS = 600
"""Far longer than a checkpoint's git commands take, even a cold one on a large workspace."""
SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
"""What a session id may be: it names a ref and files."""


class UnknownCheckpointError(TrellisError, ValueError):
    """An id that names no checkpoint of the workspace."""

    def __init__(self, checkpoint_id: str, workspace: Path) -> None:
        self.checkpoint_id = checkpoint_id
        super().__init__(f"no checkpoint {checkpoint_id!r} among the checkpoints of {workspace}")


class CheckpointStore:
    """One session's checkpoints. Every method that touches the disk or git is async; git runs
    as subprocesses and file walks in worker threads."""

    def __init__(
        self,
        repo: ShadowRepo,
        settings: CheckpointsConfig,
        session_id: str,
        secret_patterns: tuple[str, ...],
        ledger: LargeFileLedger,
        clock: Callable[[], float],
        *,
        journal: bool = True,
    ) -> None:
        self._repo = repo
        self._settings = settings
        self.session_id = session_id
        self._secret_patterns = secret_patterns
        self._ledger = ledger
        self._clock = clock
        self._index = repo.git_dir / f"index-{session_id}"
        self._lock = asyncio.Lock()
        self._last: Checkpoint | None = None
        self._last_tree: str | None = None
        self._count = 0
        self._index_matches_last = False
        self._size = WorkspaceSize({})
        self._off: Unavailable | None = None
        self._objects = GitObjects(repo, session_id)
        self._journal = self._new_journal()
        if not journal:
            self._journal.off = "turned off"

    def _new_journal(self) -> ChangeJournal:
        return ChangeJournal(self.workspace, self._objects, self._repo.git_dir / "info" / "exclude")

    async def aclose(self) -> None:
        """End the git processes the store keeps (`engine.checkpoints.git_pipe`); a later call
        starts them again."""
        self._journal.close()
        await self._objects.aclose()

    @property
    def workspace(self) -> Path:
        return self._repo.workspace

    @property
    def shadow_dir(self) -> Path:
        return self._repo.git_dir

    @classmethod
    async def open(
        cls,
        workspace: Path,
        data_dir: Path,
        settings: CheckpointsConfig,
        session_id: str,
        *,
        secret_patterns: Iterable[str] = (),
        clock: Callable[[], float] = time.time,
        journal: bool = True,
    ) -> CheckpointStore | Unavailable:
        """The session's store, or why the workspace gets no checkpoints: `git` missing, off
        in the config, the home folder or `/`, or more files or bytes than the limits allow.
        Raises `ValueError` for a session id that cannot name a ref. Without `journal`, every
        checkpoint takes the status path (`engine.checkpoints.journal`)."""
        if not SESSION_ID.fullmatch(session_id):
            raise ValueError(f"session id {session_id!r} must match {SESSION_ID.pattern}")
        if not settings.enabled:
            return Unavailable("checkpoints are off in the configuration ([checkpoints] enabled)")
        if not RESTORE_SUPPORTED:
            return Unavailable(
                "checkpoints need a system where a restore can refuse to follow symlinks "
                "(O_NOFOLLOW and folder descriptors)"
            )
        git = git_binary()
        if git is None:
            return Unavailable("checkpoints need git, and no `git` is on PATH")
        root = await asyncio.to_thread(workspace.resolve)
        refused = await asyncio.to_thread(refused_workspace, root)
        if refused is not None:
            return Unavailable(f"no checkpoints: {refused}")
        repo = ShadowRepo(git, shadow_dir_for(data_dir, root), root)
        ledger = await asyncio.to_thread(_prepare, repo, settings, session_id)
        store = cls(
            repo, settings, session_id, tuple(secret_patterns), ledger, clock, journal=journal
        )
        over = await store._measure()
        if over is not None:
            return over
        await store._load_refs()
        return store

    async def _measure(self) -> Unavailable | None:
        """Count the files a checkpoint would keep (and their bytes) against the limits."""
        out = await self._repo.run(
            "ls-files", "-z", "--cached", "--others", "--exclude-standard", index=self._index
        )
        paths = [os.fsdecode(p) for p in out.split(b"\0") if p and not p.endswith(b"/")]
        if len(paths) > self._settings.max_files:
            return WorkspaceSize(dict.fromkeys(paths, 0)).over(self._settings)
        self._size = await asyncio.to_thread(WorkspaceSize.measure, self.workspace, paths)
        return self._size.over(self._settings)

    async def _load_refs(self) -> None:
        """Pick up where an earlier instance of this session left off."""
        out = await self._repo.run(
            "for-each-ref",
            "--format=%(refname) %(objectname) %(tree)",
            f"{REF_ROOT}/{self.session_id}/",
        )
        newest: tuple[int, str, str] | None = None
        for line in out.decode("ascii").splitlines():
            ref, commit, tree = line.split(" ")
            number = int(ref.rsplit("/", 1)[1])
            if newest is None or number > newest[0]:
                newest = (number, commit, tree)
        if newest is not None:
            self._count, commit, self._last_tree = newest
            self._last, _ = await self._objects.checkpoint(commit)

    async def take(self, reason: str) -> Checkpoint:
        """A checkpoint of the workspace now; the session's last one when nothing changed.
        Raises `CheckpointsOffError` once the workspace has grown past a limit."""
        async with self._lock, self._repo.locked(exclusive=False):
            if self._off is not None:
                raise CheckpointsOffError(self._off)
            return await self._take(reason)

    async def _take(self, reason: str) -> Checkpoint:
        journal = self._journal
        if journal.doubt is None and self._last is not None and self._last_tree is not None:
            try:
                return await self._take_noted(reason, await journal.collect())
            except Doubt as exc:
                log.debug("checkpoint of %s by status: %s", self.workspace, exc)
            except (CheckpointError, OSError, ValueError) as exc:
                log.warning("checkpoint of %s by its journal failed: %s", self.workspace, exc)
                journal.doubt = f"a checkpoint by the journal failed: {exc}"
            # what the journal's attempt did to the ledger, the status path must look at
            self._index_matches_last = False
        if journal.off is None:
            await journal.start()
        return await self._take_by_status(reason)

    async def _take_noted(self, reason: str, noted: Noted) -> Checkpoint:
        """A checkpoint from the journal's changed paths and the last checkpoint's tree: only
        the folders on those paths are rewritten, and no git process starts."""
        assert self._last is not None
        assert self._last_tree is not None
        limit = self._settings.max_file_bytes
        dirty = noted.paths
        released: list[str] = []
        large_seen: list[tuple[str, int | None]] = []
        if self._ledger.paths():
            released, large_seen = await asyncio.to_thread(self._ledger.refresh, limit)
            dirty |= {os.fsencode(path) for path in released}
            dirty -= {os.fsencode(path) for path in self._ledger.paths()}
        if not dirty and not large_seen:
            return self._last
        if len(dirty) <= FEW:
            looked = look(self.workspace, dirty, limit)
        else:
            looked = await asyncio.to_thread(look, self.workspace, dirty, limit)
        asked = [path for path, _, _ in looked.files] + [path for path, _ in looked.large]
        answers = await self._objects.ignored(asked, folders=False)
        ignored = {
            path
            for path, out in zip(asked, answers, strict=True)
            if out and not await has_path(self._objects, self._last_tree, path)
        }
        files = [file for file in looked.files if file[0] not in ignored]
        large = [(os.fsdecode(path), info) for path, info in looked.large if path not in ignored]
        kept = [path for path, _, _ in files]
        if len(kept) <= FEW and sum(size for _, _, size in files) <= FEW_BYTES:
            data = contents(self.workspace, kept)
        else:
            data = await asyncio.to_thread(contents, self.workspace, kept)
        blobs = [object_id("blob", bytes_) for bytes_ in data]
        for blob, bytes_ in zip(blobs, data, strict=True):
            self._objects.remember_blob(blob, bytes_)
        changes: dict[bytes, Entry | object | None] = dict.fromkeys(looked.gone)
        changes.update((path, FRESH if path in noted.fresh else EMPTY) for path in looked.folders)
        for (path, mode, _), blob in zip(files, blobs, strict=True):
            changes[path] = (mode, blob)
        for path, _ in looked.large:
            changes[path] = None
        for path in looked.gone:
            self._size.forget_below(os.fsdecode(path))
        self._size.update(
            [
                *large_seen,
                *((os.fsdecode(path), None) for path in looked.gone),
                *((os.fsdecode(path), size) for path, _, size in files),
                *((path, info.st_size) for path, info in large),
            ]
        )
        self._off = self._size.over(self._settings)
        if self._off is not None:
            raise CheckpointsOffError(self._off)
        if large:
            await asyncio.to_thread(self._record_large, large)
        made: list[str] = []
        tree = await edit_tree(self._objects, self._last_tree, Edit.of(changes), made)
        if tree is None:
            tree = self._objects.tree_id({})
            made.append(tree)
        skipped = self._ledger.skipped()
        if tree == self._last_tree and skipped == self._last.skipped:
            return self._last
        self._index_matches_last = False
        written = [("blob", bytes_) for bytes_ in data]
        written += [("tree", self._objects.tree_bytes(made_tree)) for made_tree in made]
        if sum(len(bytes_) for _, bytes_ in written) <= FEW_BYTES:
            self._write(written)
        else:
            await asyncio.to_thread(self._write, written)
        # HEAD only speeds up the status path: that path moves it, this one need not
        return await self._commit(
            tree, reason, skipped, self._last.nested_repositories, move_head=False
        )

    def _write(self, objects: Sequence[tuple[str, bytes]]) -> None:
        for kind, bytes_ in objects:
            self._objects.write(kind, bytes_)

    async def _take_by_status(self, reason: str) -> Checkpoint:
        # 1. the large files by their stat, so the status below leaves the known ones out
        limit = self._settings.max_file_bytes
        released, large_seen = await asyncio.to_thread(self._ledger.refresh, limit)
        # 2. one status pass finds what else changed
        out = await self._repo.run(
            "-c",
            f"core.excludesFile={self._ledger.exclude}",
            *STATUS_ARGS,
            index=self._index,
        )
        found = await asyncio.to_thread(sort_entries, self.workspace, parse_status(out), limit)
        self._size.update([*large_seen, *found.seen])
        self._off = self._size.over(self._settings)
        if self._off is not None:
            raise CheckpointsOffError(self._off)
        if found.large:
            await asyncio.to_thread(self._record_large, found.large)
        nothing_new = not (found.index or found.unindex or found.large or large_seen)
        if nothing_new and self._index_matches_last and self._last is not None:
            return self._last
        # 3. the index takes the changed paths only; until a commit holds it, it is ahead
        self._index_matches_last = False
        if found.unindex:
            await self._update_index(("--force-remove",), found.unindex)
        if found.index or released:
            await self._update_index(("--add", "--replace"), [*found.index, *released])
        # 4. the tree; unchanged since the session's last checkpoint, that checkpoint
        tree = (await self._repo.run("write-tree", index=self._index)).decode("ascii").strip()
        skipped = self._ledger.skipped()
        nested = tuple(sorted(escape_os_text(path) for path in found.nested))
        if self._last is not None and tree == self._last_tree and skipped == self._last.skipped:
            self._index_matches_last = True
            return self._last
        checkpoint = await self._commit(tree, reason, skipped, nested)
        self._index_matches_last = True
        return checkpoint

    def _record_large(self, large: Sequence[tuple[str, os.stat_result]]) -> None:
        for path, info in large:
            self._ledger.record(path, info)
        self._ledger.save()

    async def _update_index(self, options: tuple[str, ...], paths: Sequence[str]) -> None:
        data = b"".join(os.fsencode(path) + b"\0" for path in paths)
        await self._repo.run(
            "update-index", *options, "-z", "--stdin", index=self._index, stdin=data
        )

    async def _commit(
        self,
        tree: str,
        reason: str,
        skipped: tuple[SkippedFile, ...],
        nested: tuple[str, ...],
        *,
        move_head: bool = True,
    ) -> Checkpoint:
        signature = f"{AUTHOR[0]} <{AUTHOR[1]}> {int(self._clock())} +0000"
        parent = f"parent {self._last.id}\n" if self._last is not None else ""
        text = (
            f"tree {tree}\n{parent}author {signature}\ncommitter {signature}\n\n"
            f"{commit_message(reason, skipped)}"
        )
        commit = self._objects.write("commit", text.encode("utf-8"))  # a few hundred bytes
        number = self._count + 1
        head = f"option no-deref\nupdate HEAD {commit}\n" if move_head else ""
        await self._objects.update_refs(
            f"update {REF_ROOT}/{self.session_id}/{number} {commit}\n{head}"
        )
        self._count = number
        self._last_tree = tree
        self._last = Checkpoint(
            id=commit, reason=reason, skipped=skipped, nested_repositories=nested
        )
        self._objects.remember(self._last, tree)
        return self._last

    async def changes(self, a: str, b: str | None = None) -> tuple[FileChange, ...]:
        """The file changes from checkpoint `a` to `b`; None for `b`: to the workspace now
        (which takes a checkpoint)."""
        await self._check_ids(a, *(() if b is None else (b,)))
        if b is None:
            b = (await self.take("workspace now")).id
        return await changes_between(self._objects, a, b, self._secret_patterns)

    async def plan_restore(self, target: str, expected: str) -> RestorePlan:
        """What restoring checkpoint `target` would do, given `expected`, the checkpoint the
        agent last left: files that differ from it now are someone else's (conflicts). Takes a
        checkpoint of the workspace first, so the restore itself can be undone."""
        await self._check_ids(target, expected)
        current = (await self.take("before restore")).id
        to_target = await sides_between(self._objects, current, target)
        since = await sides_between(self._objects, expected, current)
        ignore_files, outside = await self._tree_notes(target)
        return make_plan(
            target=target,
            expected=expected,
            current=current,
            to_target=to_target,
            changed_since_expected=since.keys(),
            ignore_rules=tuple(exclude_text(self._settings).splitlines()),
            ignore_files=ignore_files,
            outside_links=outside,
        )

    async def _check_ids(self, *ids: str) -> None:
        """Raises `UnknownCheckpointError` for an id that names no commit of this repository."""
        for checkpoint_id in ids:
            if not COMMIT_ID.fullmatch(checkpoint_id):
                raise UnknownCheckpointError(checkpoint_id, self.workspace)
        asked = [checkpoint_id for checkpoint_id in ids if not self._objects.known(checkpoint_id)]
        for checkpoint_id, kind in zip(asked, await self._objects.kinds(asked), strict=True):
            if kind != "commit":
                raise UnknownCheckpointError(checkpoint_id, self.workspace)

    async def _tree_notes(self, target: str) -> tuple[tuple[str, ...], tuple[PathNote, ...]]:
        """The `.gitignore` files of the target, and its symlinks that point outside."""
        out = await self._repo.run("ls-tree", "-r", "-z", "--full-tree", target)
        ignore_files: list[str] = []
        links: dict[str, str] = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            mode, _, blob = meta.decode("ascii").split(" ")
            raw = os.fsdecode(name)
            if raw == ".gitignore" or raw.endswith("/.gitignore"):
                ignore_files.append(escape_os_text(raw))
            if mode == SYMLINK_MODE:
                links[raw] = blob
        targets = await self._objects.read_blobs(links.values())
        linked = {raw: targets[blob] for raw, blob in links.items()}
        outside = await asyncio.to_thread(outside_links, self.workspace, linked)
        return tuple(ignore_files), outside

    async def restore(self, plan: RestorePlan, *, overwrite: bool = False) -> RestoreResult:
        """Bring the workspace to the plan's target. Conflicts, and paths changed since the plan
        was made, are kept unless `overwrite`. No checkpoint of this store runs meanwhile."""
        async with self._lock, self._repo.locked(exclusive=False):
            if self._off is not None:
                raise CheckpointsOffError(self._off)
            now = (await self._take("restore")).id
            if now != plan.current:
                moved = await sides_between(self._objects, plan.current, now)
                planned = {w.path for w in plan.writes} | set(plan.deletes)
                late = {escape_os_text(raw) for raw in moved} & planned
                plan = replace(plan, conflicts=tuple(sorted({*plan.conflicts, *late})))
            keep = frozenset() if overwrite else frozenset(plan.conflicts)
            blobs = await self._objects.read_blobs(
                w.blob for w in plan.writes if w.path not in keep
            )
            return await asyncio.to_thread(apply_plan, self.workspace, plan, blobs, keep)

    async def prune(self, session_id: str) -> None:
        """Drop a deleted session's checkpoints (its refs, index and large-file list) and the
        objects no other checkpoint uses."""
        if not SESSION_ID.fullmatch(session_id):
            raise ValueError(f"session id {session_id!r} must match {SESSION_ID.pattern}")
        async with self._lock, self._repo.locked(exclusive=True):
            out = await self._repo.run(
                "for-each-ref", "--format=%(refname)", f"{REF_ROOT}/{session_id}/"
            )
            refs = out.decode("ascii").split()
            if refs:
                lines = "".join(f"delete {ref}\n" for ref in refs)
                await self._repo.run("update-ref", "--stdin", stdin=lines.encode("ascii"))
            await asyncio.to_thread(_drop_session_files, self._repo.git_dir, session_id)
            await self._point_head_at_a_checkpoint()
            await self._repo.run("reflog", "expire", "--expire=now", "--all")
            await self._repo.run("gc", "--prune=now", "--quiet")
            # what the processes and caches hold may name objects that are gone now
            await self.aclose()
            self._objects = GitObjects(self._repo, self.session_id)
            off, self._journal = self._journal.off, self._new_journal()
            self._journal.off = self._journal.off or off
            if session_id == self.session_id:
                self._last, self._last_tree, self._count = None, None, 0
                self._index_matches_last = False

    async def _point_head_at_a_checkpoint(self) -> None:
        """HEAD only speeds up `git status`; it must not keep a pruned checkpoint alive."""
        out = await self._repo.run(
            "for-each-ref", "--count=1", "--sort=-committerdate", "--format=%(objectname)", REF_ROOT
        )
        newest = out.decode("ascii").strip()
        if newest:
            await self._repo.run("update-ref", "--no-deref", "HEAD", newest)
        else:
            # an unborn branch, as `git init` leaves it: a HEAD deleted outright would leave a
            # folder git no longer takes for a repository
            await self._repo.run("symbolic-ref", "HEAD", "refs/heads/main")


def _prepare(repo: ShadowRepo, settings: CheckpointsConfig, session_id: str) -> LargeFileLedger:
    """Create or update the shadow repository; a new session's index starts as a copy of the
    newest other one, so its first checkpoint finds the stat cache warm."""
    repo.prepare()
    git_dir = repo.git_dir
    excludes = exclude_text(settings)
    shadows = git_dir.parent.resolve()
    inside = (
        anchored_pattern(shadows.relative_to(repo.workspace).as_posix())
        if shadows.is_relative_to(repo.workspace)
        else None
    )
    if inside is not None:
        # a data directory inside the workspace: checkpoints must not keep themselves
        excludes += f"{inside}/\n"
    repo.write_excludes(excludes)
    index = git_dir / f"index-{session_id}"
    _drop_stale_lock(git_dir / f"index-{session_id}.lock")
    if not index.exists():
        others = sorted(
            (p for p in git_dir.glob("index-*") if not p.name.endswith(".lock")),
            key=lambda p: p.stat().st_mtime_ns,
        )
        if others:
            shutil.copyfile(others[-1], index)
    return LargeFileLedger(
        repo.workspace,
        git_dir / f"large-{session_id}.json",
        git_dir / f"large-{session_id}.exclude",
    )


def _drop_stale_lock(lock: Path) -> None:
    """A session's index lock older than any of its git commands runs is left by a process that
    died (SIGKILL, a crash); without this, the session would get no checkpoint again."""
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return
    if age > STALE_LOCK_SECONDS:
        lock.unlink(missing_ok=True)


def _drop_session_files(git_dir: Path, session_id: str) -> None:
    for name in (f"index-{session_id}", f"large-{session_id}.json", f"large-{session_id}.exclude"):
        (git_dir / name).unlink(missing_ok=True)
