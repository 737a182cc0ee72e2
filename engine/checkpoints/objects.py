"""A store's reads and writes of git objects and refs: reads through a long-lived
`cat-file --batch-command` (`engine.checkpoints.git_pipe`), refs through `update-ref --stdin`,
the ignore rules through `check-ignore --stdin`; objects written as git writes loose ones. Commits this store made and tree listings it read or wrote are kept by id, so a
diff between two of its checkpoints reads nothing it already knows.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
import zlib
from collections.abc import Iterable, Sequence

from engine.checkpoints.checkpoint import Checkpoint, parse_message
from engine.checkpoints.git_pipe import GitPipe, read_field, read_line
from engine.checkpoints.shadow_repo import CheckpointError, ShadowRepo

TREE_MODE = "040000"
Entry = tuple[str, str]
"""A tree entry: git's mode (`040000` for a folder) and the object id."""
Listing = dict[bytes, Entry]
"""A tree's entries by name."""

IGNORED_CACHE = 100_000
BLOB_CACHE_BYTES = 8 * 1024 * 1024
"""The bytes of blobs the store wrote, kept for the diffs that follow: a turn's diff needs the
files its checkpoints just read."""
TREE_CACHE = 4096
"""Tree listings kept by id; a turn touches a few, a diff of a large change a few hundred."""


class GitObjects:
    """The object reads and writes of one store; `aclose` ends its git processes."""

    def __init__(self, repo: ShadowRepo, session_id: str) -> None:
        self._repo = repo
        self._cat = GitPipe(repo, "cat-file", "--batch-command")
        self._refs = GitPipe(repo, "update-ref", "--stdin")
        self._ignores = GitPipe(repo, "check-ignore", "--stdin", "-z", "-v", "-n", "--no-index")
        self._objects_dir = repo.git_dir / "objects"
        self._checkpoints: dict[str, tuple[Checkpoint, str]] = {}
        self._listings: dict[str, Listing] = {}
        self._ignored: dict[tuple[bytes, bool], bool] = {}
        self._blob_bytes: dict[str, bytes] = {}
        self._blob_total = 0

    @property
    def pipes(self) -> tuple[GitPipe, ...]:
        return (self._cat, self._refs, self._ignores)

    async def aclose(self) -> None:
        for pipe in self.pipes:
            await pipe.aclose()

    async def restart_ignores(self) -> None:
        """`check-ignore` reads the excludes once, and the answers are kept: after a change
        to the ignore rules, a new process and no answers."""
        self._ignored.clear()
        await self._ignores.aclose()

    # --- reads ---------------------------------------------------------------------------------

    async def read(self, ids: Sequence[str]) -> list[tuple[str, bytes] | None]:
        """Each object's type and bytes, None for one that is not there; one request."""
        if not ids:
            return []
        request = "".join(f"contents {object_id}\n" for object_id in ids).encode("ascii")

        async def answers(out: asyncio.StreamReader) -> list[tuple[str, bytes] | None]:
            found: list[tuple[str, bytes] | None] = []
            for _ in ids:
                header = (await read_line(out)).split(b" ")
                if len(header) != 3:
                    found.append(None)
                    continue
                data = await out.readexactly(int(header[2]) + 1)
                found.append((header[1].decode("ascii"), data[:-1]))
            return found

        return await self._cat.ask(request, answers)

    async def kinds(self, ids: Sequence[str]) -> list[str | None]:
        """Each object's type, None for one that is not there."""
        if not ids:
            return []
        request = "".join(f"info {object_id}\n" for object_id in ids).encode("ascii")

        async def answers(out: asyncio.StreamReader) -> list[str | None]:
            found: list[str | None] = []
            for _ in ids:
                header = (await read_line(out)).split(b" ")
                found.append(header[1].decode("ascii") if len(header) == 3 else None)
            return found

        return await self._cat.ask(request, answers)

    def remember_blob(self, blob: str, data: bytes) -> None:
        """Bytes whose blob id is `blob` (the caller computed it from them)."""
        if len(data) > BLOB_CACHE_BYTES // 8 or blob in self._blob_bytes:
            return
        if self._blob_total + len(data) > BLOB_CACHE_BYTES:
            self._blob_bytes.clear()
            self._blob_total = 0
        self._blob_bytes[blob] = data
        self._blob_total += len(data)

    async def read_blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        asked = set(ids)
        found = {blob: self._blob_bytes[blob] for blob in asked if blob in self._blob_bytes}
        wanted = sorted(asked - found.keys())
        for object_id, got in zip(wanted, await self.read(wanted), strict=True):
            if got is None:
                raise CheckpointError(("cat-file", object_id), 1, b"no such object")
            found[object_id] = got[1]
        return found

    def known(self, commit: str) -> bool:
        return commit in self._checkpoints

    async def checkpoint(self, commit: str) -> tuple[Checkpoint, str]:
        """The checkpoint a commit is, and its tree's id. Raises `CheckpointError` when the id
        names no commit."""
        known = self._checkpoints.get(commit)
        if known is not None:
            return known
        (got,) = await self.read([commit])
        if got is None or got[0] != "commit":
            raise CheckpointError(("cat-file", commit), 1, b"no such commit")
        head, _, message = got[1].decode("utf-8", "replace").partition("\n\n")
        tree = head.split("\n", 1)[0].removeprefix("tree ")
        reason, skipped = parse_message(message)
        return self.remember(Checkpoint(id=commit, reason=reason, skipped=skipped), tree)

    def remember(self, checkpoint: Checkpoint, tree: str) -> tuple[Checkpoint, str]:
        self._checkpoints[checkpoint.id] = (checkpoint, tree)
        return checkpoint, tree

    async def listing(self, tree: str) -> Listing:
        """A tree's entries (do not change the dict: it is the cache's)."""
        known = self._listings.get(tree)
        if known is not None:
            return known
        (got,) = await self.read([tree])
        if got is None or got[0] != "tree":
            raise CheckpointError(("cat-file", tree), 1, b"no such tree")
        return self._keep(tree, parse_tree(got[1], len(tree) // 2))

    def _keep(self, tree: str, listing: Listing) -> Listing:
        if len(self._listings) >= TREE_CACHE:
            self._listings.clear()
        self._listings[tree] = listing
        return listing

    # --- writes --------------------------------------------------------------------------------

    def tree_id(self, listing: Listing) -> str:
        """The id a tree of these entries has (the listing is kept under it, for
        `tree_bytes`)."""
        tree = object_id("tree", tree_object(listing))
        self._keep(tree, dict(listing))
        return tree

    def tree_bytes(self, tree: str) -> bytes:
        """A tree made by `tree_id`, as its object's bytes."""
        return tree_object(self._listings[tree])

    def write(self, kind: str, data: bytes) -> str:
        """Write one object, as git writes a loose one (`objects/xx/rest`, the zlib stream of
        `KIND SIZE\\0` and the bytes, read-only, made under a temporary name and linked into
        place), unless it is there; its id. Blocking: a few small ones in the event loop."""
        found = object_id(kind, data)
        final = self._objects_dir / found[:2] / found[2:]
        if final.exists():
            return found
        final.parent.mkdir(exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix="tmp_obj_", dir=final.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(zlib.compress(f"{kind} {len(data)}\0".encode("ascii") + data, 1))
            os.chmod(temporary, 0o444)
            with contextlib.suppress(FileExistsError):
                os.link(temporary, final)
        finally:
            os.unlink(temporary)
        return found

    async def update_refs(self, updates: str) -> None:
        """One transaction of `update-ref --stdin` commands."""
        request = f"start\n{updates}commit\n".encode("ascii")

        async def answers(out: asyncio.StreamReader) -> tuple[bytes, bytes]:
            return await read_line(out), await read_line(out)

        said = await self._refs.ask(request, answers)
        if said != (b"start: ok", b"commit: ok"):
            raise CheckpointError(("update-ref", "--stdin"), 1, b" / ".join(said))

    async def ignored(self, paths: Sequence[bytes], *, folders: bool) -> list[bool]:
        """Whether the ignore rules (`.gitignore` files, the shadow repository's excludes)
        leave each work-tree-relative path out; `folders`: the paths are folders (a rule
        may name folders only). Answers are kept until `restart_ignores`."""
        asked = [path for path in dict.fromkeys(paths) if (path, folders) not in self._ignored]
        if len(self._ignored) + len(asked) > IGNORED_CACHE:
            self._ignored.clear()
            asked = list(dict.fromkeys(paths))
        for path, out in zip(asked, await self._check_ignore(asked), strict=True):
            self._ignored[path, folders] = out
        return [self._ignored[path, folders] for path in paths]

    async def _check_ignore(self, paths: Sequence[bytes]) -> list[bool]:
        if not paths:
            return []

        async def answers(out: asyncio.StreamReader) -> list[bool]:
            found: list[bool] = []
            for _ in paths:
                _source, _line, pattern, _path = [await read_field(out) for _ in range(4)]
                found.append(bool(pattern) and not pattern.startswith(b"!"))
            return found

        return await self._ignores.ask(b"".join(path + b"\0" for path in paths), answers)


def _kind(mode: str) -> str:
    return "tree" if mode == TREE_MODE else "commit" if mode == "160000" else "blob"


def object_id(kind: str, data: bytes) -> str:
    """The git object id of `data` as an object of this kind (SHA-1, as the repository's)."""
    digest = hashlib.sha1(f"{kind} {len(data)}\0".encode("ascii"), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


def tree_object(listing: Listing) -> bytes:
    """A tree's bytes as git writes them: entries in git's order (a folder's name sorts as if
    it ended in `/`), modes without a leading zero, binary ids."""

    def order(name: bytes) -> bytes:
        return name + b"/" if listing[name][0] == TREE_MODE else name

    return b"".join(
        listing[name][0].lstrip("0").encode("ascii")
        + b" "
        + name
        + b"\0"
        + bytes.fromhex(listing[name][1])
        for name in sorted(listing, key=order)
    )


def parse_tree(data: bytes, id_bytes: int) -> Listing:
    """A tree object's bytes: `MODE NAME\\0` and the binary id, per entry."""
    listing: Listing = {}
    at = 0
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        mode = data[at:space].decode("ascii").rjust(6, "0")
        object_id = data[nul + 1 : nul + 1 + id_bytes].hex()
        listing[data[space + 1 : nul]] = (mode, object_id)
        at = nul + 1 + id_bytes
    return listing
