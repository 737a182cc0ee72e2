"""Trees edited and compared by their listings, read and written through `GitObjects`: a new
checkpoint rewrites only the folders on its changed paths, and a diff of two checkpoints opens
only the folders whose ids differ."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from engine.checkpoints.objects import TREE_MODE, Entry, GitObjects, Listing

EMPTY = object()
"""In an edit: a folder to keep only if something is in it (a file there is replaced)."""
FRESH = object()
"""In an edit: a folder made anew, so nothing of what was there before is kept."""


@dataclass(slots=True)
class Edit:
    """What changes in one folder: entries set (`Entry`), removed (None), or edited below
    (`Edit`)."""

    below: dict[bytes, Entry | Edit | None]
    fresh: bool = False
    """Start from an empty folder, not from what the tree held."""

    @classmethod
    def of(cls, changes: Mapping[bytes, Entry | object | None]) -> Edit:
        """From workspace-relative paths: an `Entry` to set, None to remove whatever is there
        (a file or a folder), `EMPTY` for a folder, `FRESH` for a folder made anew. A path below one that is set or removed
        is left out: what the shorter path says wins."""
        root = cls({})
        for path in sorted(changes):
            change = changes[path]
            *folders, name = path.split(b"/")
            node: Edit | None = root
            for folder in folders:
                assert node is not None
                child = node.below.get(folder, EMPTY_EDIT)
                if child is EMPTY_EDIT:
                    child = node.below[folder] = Edit({})
                node = child if isinstance(child, Edit) else None
                if node is None:
                    break
            if node is None:
                continue
            if change is EMPTY:
                if name not in node.below:
                    node.below[name] = Edit({})
            elif change is FRESH:
                node.below[name] = Edit({}, fresh=True)
            else:
                assert change is None or isinstance(change, tuple)
                node.below[name] = change
        return root


EMPTY_EDIT = Edit({})
"""A marker for `dict.get`: never a node of an edit."""


async def edit_tree(
    objects: GitObjects, tree: str | None, edit: Edit, made: list[str]
) -> str | None:
    """The id of `tree` (None: empty) with `edit` applied; None when nothing is left. The ids
    are computed here; the new trees, added to `made`, are for `GitObjects.write_trees`."""
    if edit.fresh:
        tree = None
    old: Listing = await objects.listing(tree) if tree is not None else {}
    listing = dict(old)
    for name, change in edit.below.items():
        if isinstance(change, Edit):
            entry = listing.get(name)
            below = entry[1] if entry is not None and entry[0] == TREE_MODE else None
            new = await edit_tree(objects, below, change, made)
            if new is None:
                listing.pop(name, None)
            else:
                listing[name] = (TREE_MODE, new)
        elif change is None:
            listing.pop(name, None)
        else:
            listing[name] = change
    if not listing:
        return None
    if tree is not None and listing == old:
        return tree
    new_tree = objects.tree_id(listing)
    made.append(new_tree)
    return new_tree


async def has_path(objects: GitObjects, tree: str, path: bytes) -> bool:
    """Whether `path` names a file of the tree."""
    *folders, name = path.split(b"/")
    for folder in folders:
        entry = (await objects.listing(tree)).get(folder)
        if entry is None or entry[0] != TREE_MODE:
            return False
        tree = entry[1]
    entry = (await objects.listing(tree)).get(name)
    return entry is not None and entry[0] != TREE_MODE


Pair = tuple[Entry | None, Entry | None]


async def tree_changes(objects: GitObjects, a: str, b: str) -> dict[str, Pair]:
    """Every file path (raw, `surrogateescape`) whose mode or blob differs from tree a to b,
    as `git diff-tree -r` lists them: a file that became a folder is a deletion and additions."""
    found: dict[str, Pair] = {}
    await _compare(objects, a, b, b"", found)
    return found


async def _compare(
    objects: GitObjects, a: str | None, b: str | None, prefix: bytes, found: dict[str, Pair]
) -> None:
    if a == b:
        return
    old = await objects.listing(a) if a is not None else {}
    new = await objects.listing(b) if b is not None else {}
    for name in old.keys() | new.keys():
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        path = prefix + name
        old_tree = before[1] if before is not None and before[0] == TREE_MODE else None
        new_tree = after[1] if after is not None and after[0] == TREE_MODE else None
        if old_tree is not None or new_tree is not None:
            await _compare(objects, old_tree, new_tree, path + b"/", found)
        old_file = before if before is not None and old_tree is None else None
        new_file = after if after is not None and new_tree is None else None
        if old_file != new_file:
            found[os.fsdecode(path)] = (old_file, new_file)
