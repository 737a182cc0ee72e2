"""A workspace file's whole text, where the file tools get and put it: the local disk, or the files
a front end lends (`ToolContext.front_end`, an editor's unsaved buffers). Each function returns the
error output the model should read instead of raising; the disk is touched in worker threads.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.tools.front_end import FrontEndError, TextFileReader
from engine.tools.tool import ToolContext, ToolOutput
from engine.tools.workspace import NotRegularFileError, open_regular

SNIFF_BYTES = 8192
"""How much of a file is inspected for NUL bytes to call it binary (the heuristic git uses)."""


def looks_binary(head: bytes) -> bool:
    """Text files hold no NUL bytes; binary formats nearly always do near the start."""
    return b"\x00" in head


async def lent_text(
    ctx: ToolContext, reader: TextFileReader, target: Path, shown: str, binary_note: str
) -> str | ToolOutput:
    """The text the front end holds for `target`, or the error the model should read. A file
    the disk does not have either, which the front end answers with an error or with no text
    at all (Toad reads a missing file as empty), is no such file, not an empty one."""
    try:
        async with asyncio.timeout(ctx.timeout):
            text = await reader.read_text(target)
    except FrontEndError as error:
        if not await asyncio.to_thread(on_disk, target):
            return ToolOutput.error(f"file {shown!r} not found")
        return ToolOutput.error(f"cannot read {shown!r}: {error}")
    except TimeoutError:
        return ToolOutput.error(f"cannot read {shown!r}: {_no_answer(ctx)}")
    if not text and not await asyncio.to_thread(on_disk, target):
        return ToolOutput.error(f"file {shown!r} not found")
    if "\x00" in text[:SNIFF_BYTES]:  # looks_binary, on text
        return ToolOutput.error(f"{shown!r} is a binary file; {binary_note}")
    return text


def on_disk(target: Path) -> bool:
    """Whether the local disk has something at `target` (True when it cannot tell: a folder that
    cannot be searched leaves the front end's own answer standing)."""
    try:
        return target.exists()
    except OSError:
        return True


def _no_answer(ctx: ToolContext) -> str:
    return f"the front end did not answer within {ctx.timeout:g} s"


def local_text(target: Path, shown: str) -> str | ToolOutput:
    """The UTF-8 text of a regular file on disk, or the error edit_file should return."""
    try:
        if not target.exists():
            return ToolOutput.error(f"file {shown!r} not found")
        with open_regular(target, shown) as handle:
            data = handle.read()
    except NotRegularFileError as error:
        return ToolOutput.error(f"{error}; edit_file edits regular files only")
    except OSError as error:
        return ToolOutput.error(f"cannot read {shown!r}: {error.strerror or error}")
    if looks_binary(data[:SNIFF_BYTES]):
        return ToolOutput.error(f"{shown!r} is a binary file; edit_file edits text only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ToolOutput.error(f"{shown!r} is not UTF-8 text; edit_file cannot edit it")


async def write_text(ctx: ToolContext, target: Path, shown: str, content: str) -> ToolOutput | None:
    """Write `content` where the tools write (the front end's files, else the disk, parents
    created); the error the model should read, or None."""
    writer = ctx.front_end.writer
    if writer is None:
        return await asyncio.to_thread(_write_local, target, shown, content)
    try:
        async with asyncio.timeout(ctx.timeout):
            await writer.write_text(target, content)
    except FrontEndError as error:
        return ToolOutput.error(f"cannot write {shown!r}: {error}")
    except TimeoutError:
        return ToolOutput.error(f"cannot write {shown!r}: {_no_answer(ctx)}")
    return None


def _write_local(target: Path, shown: str, content: str) -> ToolOutput | None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8", newline="")
    except OSError as error:
        return ToolOutput.error(f"cannot write {shown!r}: {error.strerror or error}")
    return None
