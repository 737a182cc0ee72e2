"""The file tools: read, list, write and edit workspace files, each confined to the workspace.

Every file-system touch runs in a worker thread (`asyncio.to_thread`) so a slow disk or a large file
never stalls the event loop; a cancelled call stops waiting at once while the bounded thread work
finishes on its own. Where the front end lends its files (`ToolContext.front_end`: an editor's
unsaved buffers), read_file and edit_file read the text through it and write_file and edit_file
write through it; confinement and the protected paths are still checked here first, on the local
paths, and the results have the same form and limits (`file_text` gets and puts the text).
"""

from __future__ import annotations

import asyncio
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, TextIO

from pydantic import Field, model_validator

from engine.counts import counted
from engine.os_text import escape_os_text
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.tools.builtins.file_record import PriorText, read_prior, recorded_change
from engine.tools.builtins.file_text import (
    SNIFF_BYTES,
    lent_text,
    local_text,
    looks_binary,
    on_disk,
    write_text,
)
from engine.tools.front_end import FrontEndError
from engine.tools.protected import write_refusal
from engine.tools.tool import Tool, ToolArgs, ToolContext, ToolKind, ToolOutput, bound_text
from engine.tools.workspace import (
    NotRegularFileError,
    WorkspaceEscapeError,
    open_regular,
    relative_to_workspace,
    resolve_shown_path,
)

SKIP_PIECE = 65536
"""How much of a line is read at a time while skipping to `start_line`."""


@dataclass(frozen=True, slots=True)
class Confined:
    """A workspace path after confinement: the absolute target and its relative name for labels."""

    target: Path
    relative: str


def confine(ctx: ToolContext, path: str) -> Confined | ToolOutput:
    """Resolve `path` (as the model writes it) inside the workspace, or the error output the model
    should read."""
    try:
        target = resolve_shown_path(ctx.root, path)
    except WorkspaceEscapeError as escape:
        return ToolOutput.error(str(escape))
    return Confined(target, relative_to_workspace(ctx.root, target))


def confine_write(ctx: ToolContext, path: str) -> Confined | ToolOutput:
    """`confine`, then refuse Trellis's own configuration unless the user allowed that path."""
    where = confine(ctx, path)
    if isinstance(where, ToolOutput):
        return where
    refusal = write_refusal(ctx, where.target, path)
    return where if refusal is None else ToolOutput.error(refusal)


class ReadFileArgs(ToolArgs):
    path: str = Field(description="File path relative to the workspace root.")
    start_line: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="First line to return (1-based, inclusive)."
    )
    end_line: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Last line to return (1-based, inclusive)."
    )

    @model_validator(mode="after")
    def _ordered(self) -> ReadFileArgs:
        if self.start_line and self.end_line and self.end_line < self.start_line:
            raise ValueError(f"end_line ({self.end_line}) is before start_line ({self.start_line})")
        return self


class ReadFile(Tool[ReadFileArgs]):
    """Reads a text file, whole or a line range, bounded to `max_output` characters."""

    name = "read_file"
    description = (
        "Read a UTF-8 text file in the workspace. Optionally pass start_line and end_line "
        "(1-based, inclusive) to read a range; long files are truncated with a note."
    )
    args_model = ReadFileArgs
    kind = ToolKind.read

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolOutput:
        reader = ctx.front_end.reader
        if reader is None:
            return await asyncio.to_thread(self._read, args, ctx)
        where = await asyncio.to_thread(_readable_target, ctx, args.path, must_exist=False)
        if isinstance(where, ToolOutput):
            return where
        text = await lent_text(ctx, reader, where.target, args.path, "read_file shows text only")
        if isinstance(text, ToolOutput):
            return text
        start = args.start_line or 1
        taken = _take_lines(io.StringIO(text), start, args.end_line, ctx.max_output)
        return _shown_lines(taken, args, ctx, where, len(text.encode("utf-8", "surrogatepass")))

    def _read(self, args: ReadFileArgs, ctx: ToolContext) -> ToolOutput:
        where = _readable_target(ctx, args.path, must_exist=True)
        if isinstance(where, ToolOutput):
            return where
        start = args.start_line or 1
        try:
            with open_regular(where.target, args.path) as raw:
                size = os.fstat(raw.fileno()).st_size
                if looks_binary(raw.read(SNIFF_BYTES)):
                    return ToolOutput.error(
                        f"{args.path!r} is a binary file ({size} bytes); read_file shows text only"
                    )
                raw.seek(0)
                text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
                taken = _take_lines(text, start, args.end_line, ctx.max_output)
        except NotRegularFileError as error:
            return ToolOutput.error(f"{error}; read_file reads regular files only")
        except OSError as error:
            return ToolOutput.error(f"cannot read {args.path!r}: {error.strerror or error}")
        return _shown_lines(taken, args, ctx, where, size)


def _readable_target(ctx: ToolContext, path: str, *, must_exist: bool) -> Confined | ToolOutput:
    """Where read_file reads: confined, and not a directory. A front end's buffer may hold a
    file the disk does not have yet, so only a local read needs it on disk."""
    where = confine(ctx, path)
    if isinstance(where, ToolOutput):
        return where
    try:  # in a folder that cannot be searched, even asking whether it exists fails
        if must_exist and not where.target.exists():
            return ToolOutput.error(f"file {path!r} not found")
        if where.target.is_dir():
            return ToolOutput.error(f"{path!r} is a directory; use list_files to see it")
    except OSError as error:
        return ToolOutput.error(f"cannot read {path!r}: {error.strerror or error}")
    return where


def _shown_lines(
    taken: _Taken, args: ReadFileArgs, ctx: ToolContext, where: Confined, size: int
) -> ToolOutput:
    """What read_file returns for the lines it took: the text with a marker if it was cut."""
    start = args.start_line or 1
    if taken.seen < start and not (start == 1 and taken.seen == 0):
        return ToolOutput.error(
            f"start_line {start} is past the end of {args.path!r} ({taken.seen} lines)"
        )
    content = taken.text
    if taken.cut:
        content += "\n" + taken.marker(start, args.end_line, ctx.max_output, size)
    return ToolOutput(content, label=ctx.label_for([where.relative]))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Taken:
    """What `_take_lines` read: the text, the last line in it, and whether the limit cut it."""

    text: str
    last: int  # the last line shown (whole, or cut when it alone exceeds the limit)
    seen: int  # the last line reached in the file
    cut: bool = False
    line_cut: bool = False  # the last line shown is longer than the limit and was cut

    def marker(self, start: int, end: int | None, limit: int, size: int) -> str:
        """Where a cut read stands and the exact range that continues it, as long as this one."""
        after = self.last + 1
        through = after + (self.last - start)
        if end is not None:
            through = min(through, end)
        shown = f"lines {start}-{self.last}" if self.last > start else f"line {start}"
        why = (
            f"line {self.last} alone is longer than {limit:,} characters; only its start is shown"
            if self.line_cut
            else f"{shown} shown"
        )
        more = self.seen > self.last and (end is None or after <= end)
        tail = f"; continue with start_line={after}, end_line={through}" if more else ""
        return f"[output cut at {limit:,} characters of a {size:,}-byte file: {why}{tail}]"


def _take_lines(text: TextIO, start: int, end: int | None, limit: int) -> _Taken:
    """Whole lines `start..end` up to `limit` characters; a first line longer than the limit is
    cut, any later one is left for the next read.

    Reads in bounded pieces, so a huge single-line file costs no more memory than the limit.
    """
    parts: list[str] = []
    used = 0
    number = 1  # the line the next piece belongs to
    seen = 0
    while True:
        wanted = number >= start
        if wanted and end is not None and number > end:
            break
        piece = text.readline(limit - used + 1 if wanted else SKIP_PIECE)
        if not piece:
            break
        seen = number
        if wanted and used + len(piece) > limit:
            if parts:
                return _Taken(text="".join(parts), last=number - 1, seen=seen, cut=True)
            head = piece[:limit]
            # Whether a line follows decides the marker; skipping costs time, never memory.
            while not piece.endswith("\n") and (piece := text.readline(SKIP_PIECE)):
                pass
            seen = number + 1 if text.read(1) else number
            return _Taken(text=head, last=number, seen=seen, cut=True, line_cut=True)
        if wanted:
            parts.append(piece)
            used += len(piece)
        if piece.endswith("\n"):
            number += 1
    return _Taken(text="".join(parts), last=seen, seen=seen)


class ListFilesArgs(ToolArgs):
    path: str = Field(default=".", description="Directory relative to the workspace root.")


class ListFiles(Tool[ListFilesArgs]):
    """Lists one directory so the model can find its way; names only, never contents."""

    name = "list_files"
    description = (
        "List the entries of a workspace directory (default: the root), sorted; "
        "directories end with '/'."
    )
    args_model = ListFilesArgs
    kind = ToolKind.read

    async def run(self, args: ListFilesArgs, ctx: ToolContext) -> ToolOutput:
        return await asyncio.to_thread(self._list, args, ctx)

    def _list(self, args: ListFilesArgs, ctx: ToolContext) -> ToolOutput:
        where = confine(ctx, args.path)
        if isinstance(where, ToolOutput):
            return where
        target = where.target
        try:
            if not target.exists():
                return ToolOutput.error(f"directory {args.path!r} not found")
            if not target.is_dir():
                return ToolOutput.error(f"{args.path!r} is a file, not a directory; use read_file")
            entries = sorted(
                escape_os_text(entry.name) + ("/" if entry.is_dir() else "")
                for entry in target.iterdir()
            )
        except OSError as error:
            return ToolOutput.error(f"cannot list {args.path!r}: {error.strerror or error}")
        # Names are not contents: a listing is internal even when it names a secret file.
        label = PrivatizationLabel.of(PrivacyClass.internal, where.relative)
        if not entries:
            return ToolOutput(f"directory {args.path!r} is empty", label=label)
        listing = bound_text("\n".join(entries), ctx.max_output, hint="list a subdirectory")
        return ToolOutput(listing, label=label)


class WriteFileArgs(ToolArgs):
    path: str = Field(description="File path relative to the workspace root.")
    content: str = Field(description="The complete new content of the file.")


class WriteFile(Tool[WriteFileArgs]):
    """Creates or replaces a whole file; parent directories are created as needed."""

    name = "write_file"
    description = (
        "Write content to a workspace file, creating it (and its directories) or replacing it."
    )
    args_model = WriteFileArgs
    kind = ToolKind.edit
    may_change_workspace = True
    needs_permission = True

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolOutput:
        where = await asyncio.to_thread(confine_write, ctx, args.path)
        if isinstance(where, ToolOutput):
            return where
        existed = await asyncio.to_thread(_existing_file, where.target, args.path)
        if isinstance(existed, ToolOutput):
            return existed
        prior = await _prior(ctx, where, args.path)
        failed = await write_text(ctx, where.target, args.path, args.content)
        if failed is not None:
            return failed
        verb = "replaced" if prior is not None else "created"
        lines = args.content.count("\n") + (0 if args.content.endswith("\n") else 1)
        lines = lines if args.content else 0
        return ToolOutput(
            f"{verb} {where.relative} ({counted(len(args.content), 'character')}, {counted(lines, 'line')})",
            label=PrivatizationLabel.of(PrivacyClass.internal, where.relative),
            change=recorded_change(ctx, where.relative, prior, args.content),
        )


async def _prior(ctx: ToolContext, where: Confined, shown: str) -> PriorText | None:
    """What write_file replaces, for its record: the front end's text where it lends its files
    (a file neither it nor the disk has, or an answer it cannot give, is read from the disk),
    else the disk's; None when there is no such file."""
    reader = ctx.front_end.reader
    if reader is not None:
        try:
            async with asyncio.timeout(ctx.timeout):
                text = await reader.read_text(where.target)
        except (FrontEndError, TimeoutError):
            pass
        else:
            there = bool(text) or await asyncio.to_thread(on_disk, where.target)
            if there:
                return PriorText.of_text(text)
    return await asyncio.to_thread(read_prior, where.target, shown)


def _existing_file(target: Path, shown: str) -> bool | ToolOutput:
    """Whether write_file replaces a file (else it creates one); a directory is an error."""
    try:
        if target.is_dir():
            return ToolOutput.error(f"{shown!r} is a directory")
        return target.exists()
    except OSError as error:  # a folder that cannot be searched
        return ToolOutput.error(f"cannot write {shown!r}: {error.strerror or error}")


class EditFileArgs(ToolArgs):
    path: str = Field(description="File path relative to the workspace root.")
    old: str = Field(min_length=1, description="Exact text to replace; must occur exactly once.")
    new: str = Field(description="Replacement text.")


class EditFile(Tool[EditFileArgs]):
    """Replaces one exact, unique snippet, so an edit can never land in the wrong place."""

    name = "edit_file"
    description = (
        "Replace the exact text `old` with `new` in a workspace file. `old` must occur exactly "
        "once (include surrounding lines to make it unique), matching whitespace exactly."
    )
    args_model = EditFileArgs
    kind = ToolKind.edit
    may_change_workspace = True
    needs_permission = True

    async def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolOutput:
        where = await asyncio.to_thread(confine_write, ctx, args.path)
        if isinstance(where, ToolOutput):
            return where
        reader = ctx.front_end.reader
        if reader is None:
            text = await asyncio.to_thread(local_text, where.target, args.path)
        else:
            text = await lent_text(
                ctx, reader, where.target, args.path, "edit_file edits text only"
            )
        if isinstance(text, ToolOutput):
            return text
        edited = replace_once(text, args)
        if isinstance(edited, ToolOutput):
            return edited
        new_text, line = edited
        failed = await write_text(ctx, where.target, args.path, new_text)
        if failed is not None:
            return failed
        return ToolOutput(
            f"edited {where.relative}: replaced 1 occurrence at line {line}",
            label=PrivatizationLabel.of(PrivacyClass.internal, where.relative),
            change=recorded_change(
                ctx, where.relative, PriorText.of_text(text), new_text, line=line
            ),
        )


def replace_once(text: str, args: EditFileArgs) -> tuple[str, int] | ToolOutput:
    """The text with `old` replaced once and the line it was at, or why it cannot be: edit_file's
    rule, which the preview of an edit (`file_change`) applies too."""
    old, new = args.old, args.new
    if old not in text and "\r\n" in text:
        # The model writes "\n"; a CRLF file keeps its own line endings.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0:
        return ToolOutput.error(
            f"old text not found in {args.path!r}; it must match the file exactly, "
            "including whitespace and indentation (read_file shows the current text)"
        )
    if count > 1:
        lines = ", ".join(str(n) for n in _occurrence_lines(text, old)[:20])
        return ToolOutput.error(
            f"old text occurs {count} times in {args.path!r} (at lines {lines}); include "
            "more surrounding lines so that it occurs exactly once"
        )
    at = text.index(old)
    return text.replace(old, new, 1), text.count("\n", 0, at) + 1


def _occurrence_lines(text: str, needle: str) -> list[int]:
    """The 1-based line of each (non-overlapping) occurrence, for a readable ambiguity error."""
    lines: list[int] = []
    at = text.find(needle)
    while at != -1:
        lines.append(text.count("\n", 0, at) + 1)
        at = text.find(needle, at + len(needle))
    return lines
