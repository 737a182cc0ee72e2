"""What a write_file or edit_file call did to its file: the `FileChangeRecord` its `tool/result`
carries, the one record of a file change that replays, exports, ACP clients and checkpoints read.

Exact enough to put the file back: the text before (or that there was no file) and after, each
with its hash; only the hashes where a text is withheld (a secret file, one too large to keep,
one that was not UTF-8 text). What a call *would* do, shown before it runs, is `file_change`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.events import FileChangeRecord
from engine.line_diff import first_changed_line, split_lines
from engine.tools.tool import ToolContext
from engine.tools.workspace import NotRegularFileError, open_regular

RECORD_TEXT_BYTES = 128 * 1024
"""The largest text (before or after) a record keeps; past it only the hash. The record travels
in the `tool/result` event and to clients (1 MiB a message), beside the call's input, which may
hold the new text again."""

READ_PIECE = 64 * 1024
"""How much of a file is hashed at a time when only its hash is kept."""

Withheld = Literal["size", "binary", "unreadable"]


@dataclass(frozen=True, slots=True)
class PriorText:
    """A file's content before a call changed it: the SHA-256 of its bytes, and its text when it
    is UTF-8 text within `RECORD_TEXT_BYTES` (else why not; no hash when it could not be read)."""

    sha256: str | None
    text: str | None
    withheld: Withheld | None = None

    @classmethod
    def of_text(cls, text: str) -> PriorText:
        data = text.encode("utf-8", "surrogatepass")
        if len(data) > RECORD_TEXT_BYTES:
            return cls(_sha256(data), None, "size")
        return cls(_sha256(data), text)

    @classmethod
    def of_bytes(cls, data: bytes) -> PriorText:
        if len(data) > RECORD_TEXT_BYTES:
            return cls(_sha256(data), None, "size")
        try:
            return cls(_sha256(data), data.decode("utf-8"))
        except UnicodeDecodeError:
            return cls(_sha256(data), None, "binary")


UNREADABLE = PriorText(None, None, "unreadable")
"""A file that was there but could not be read before the call replaced it."""


def read_prior(target: Path, shown: str) -> PriorText | None:
    """The content of the file at `target` now, None when there is none; read in pieces, so a
    large file costs no more memory than the record keeps. Call it from a worker thread."""
    try:
        if not target.exists():
            return None
        digest = hashlib.sha256()
        kept = bytearray()
        with open_regular(target, shown) as raw:
            while piece := raw.read(READ_PIECE):
                digest.update(piece)
                if len(kept) <= RECORD_TEXT_BYTES:
                    kept += piece
    except (OSError, NotRegularFileError):
        return UNREADABLE
    if len(kept) > RECORD_TEXT_BYTES:
        return PriorText(digest.hexdigest(), None, "size")
    return PriorText.of_bytes(bytes(kept))


def recorded_change(
    ctx: ToolContext, relative: str, prior: PriorText | None, after: str, *, line: int | None = None
) -> FileChangeRecord:
    """The record of a call that left `after` in the workspace file `relative`, which held
    `prior` before (None: it did not exist). `line` is where the change starts, when the tool
    knows it (else the first line that differs). A secret file keeps its hashes only."""
    new_bytes = after.encode("utf-8", "surrogatepass")
    old_text = prior.text if prior is not None else None
    new_text: str | None = after
    withheld: Literal["secret", "size", "binary", "unreadable"] | None = (
        prior.withheld if prior is not None else None
    )
    if len(new_bytes) > RECORD_TEXT_BYTES:
        new_text, withheld = None, withheld or "size"
    if line is None:
        line = (
            first_changed_line(split_lines(old_text or ""), split_lines(after))
            if new_text is not None
            else 1
        )
    if ctx.is_secret(relative):
        old_text, new_text, withheld = None, None, "secret"
    return FileChangeRecord(
        path=relative,
        existed=prior is not None,
        old_text=old_text,
        new_text=new_text,
        old_sha256=prior.sha256 if prior is not None else None,
        new_sha256=_sha256(new_bytes),
        withheld=withheld,
        line=line,
        label=ctx.label_for([relative]),
    )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
