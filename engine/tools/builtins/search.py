"""The search tool: a regular expression over the workspace's text files, bounded every way.

Bounded in matches, line length, file size and time, and it skips binary files and the
directories no one means to search (`.git`, `.venv`, `node_modules`). The walk runs in a worker
thread that stops when the call is cancelled.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from engine.tools.builtins.file_text import SNIFF_BYTES, looks_binary
from engine.tools.builtins.files import Confined, confine
from engine.tools.tool import Tool, ToolArgs, ToolContext, ToolKind, ToolOutput, bound_text
from engine.tools.workspace import (
    WorkspaceEscapeError,
    open_regular,
    relative_to_workspace,
    resolve_in_workspace,
)

SKIPPED_DIRS = frozenset({".git", ".venv", "node_modules"})


class SearchArgs(ToolArgs):
    pattern: str = Field(min_length=1, description="Python regular expression, matched per line.")
    path: str = Field(
        default=".", description="File or directory to search, relative to the workspace root."
    )


@dataclass(slots=True)
class _Findings:
    """What a walk found, and why it stopped early or passed files over."""

    matches: list[str] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    binary: int = 0
    too_large: int = 0
    outside: int = 0
    stopped: str = ""
    single_file: bool = False


class Search(Tool[SearchArgs]):
    """Finds lines matching a regex, as `path:line: text`, so the model can then read around them."""

    name = "search"
    description = (
        "Search workspace text files for a regular expression (Python syntax, one line at a time). "
        "Returns matching lines as path:line: text. Skips binary files, .git, .venv, node_modules."
    )
    args_model = SearchArgs
    kind = ToolKind.search
    max_matches: int
    max_line_chars: int
    max_file_bytes: int

    def __init__(
        self,
        *,
        max_matches: int = 200,
        max_line_chars: int = 300,
        max_file_bytes: int = 5_000_000,
    ) -> None:
        self.max_matches = max_matches
        self.max_line_chars = max_line_chars
        self.max_file_bytes = max_file_bytes

    async def run(self, args: SearchArgs, ctx: ToolContext) -> ToolOutput:
        try:
            regex = re.compile(args.pattern)
        except re.error as error:
            return ToolOutput.error(f"invalid regular expression {args.pattern!r}: {error}")
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._search, regex, args, ctx, stop)
        except asyncio.CancelledError:
            stop.set()
            raise

    def _search(
        self, regex: re.Pattern[str], args: SearchArgs, ctx: ToolContext, stop: threading.Event
    ) -> ToolOutput:
        where = confine(ctx, args.path)
        if isinstance(where, ToolOutput):
            return where
        try:
            if not where.target.exists():
                return ToolOutput.error(f"path {args.path!r} not found")
            found = _Findings(single_file=not where.target.is_dir())
        except OSError as error:
            return ToolOutput.error(f"cannot search {args.path!r}: {error.strerror or error}")
        deadline = time.monotonic() + ctx.timeout
        for file in _walk(where):
            if stop.is_set():
                found.stopped = "cancelled"
                break
            if time.monotonic() > deadline:
                found.stopped = f"search stopped after {ctx.timeout:g} s; narrow the path"
                break
            self._scan(file, regex, ctx, found)
            if len(found.matches) >= self.max_matches:
                found.stopped = (
                    f"stopped after {self.max_matches} matches; narrow the pattern or the path"
                )
                break
        return self._report(args, ctx, found)

    def _scan(self, file: Path, regex: re.Pattern[str], ctx: ToolContext, found: _Findings) -> None:
        """Add the matches of one file, unless it escapes the workspace, is binary or too large."""
        try:
            real = resolve_in_workspace(ctx.root, file)
        except WorkspaceEscapeError:
            found.outside += 1
            return
        try:
            with open_regular(real, str(file)) as handle:
                if os.fstat(handle.fileno()).st_size > self.max_file_bytes:
                    found.too_large += 1
                    return
                data = handle.read()
        except OSError:  # gone, unreadable, or not a regular file (a FIFO is never opened)
            return
        if looks_binary(data[:SNIFF_BYTES]):
            found.binary += 1
            return
        relative = relative_to_workspace(ctx.root, file.absolute())
        text = data.decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            # A bounded slice keeps a pathological line from stalling the regex engine.
            if regex.search(line, 0, self.max_line_chars * 4):
                shown = line.rstrip()
                if len(shown) > self.max_line_chars:
                    shown = shown[: self.max_line_chars] + " [line truncated]"
                found.matches.append(f"{relative}:{number}: {shown}")
                found.files.add(relative)
                if len(found.matches) >= self.max_matches:
                    return

    def _report(self, args: SearchArgs, ctx: ToolContext, found: _Findings) -> ToolOutput:
        notes = [found.stopped] if found.stopped else []
        skipped = [
            f"{count} {what}"
            for count, what in (
                # Binary files are skipped silently in a walk (images are not misses) but not
                # when the model named one.
                (found.binary if found.single_file else 0, "binary"),
                (found.too_large, f"larger than {self.max_file_bytes} bytes"),
                (found.outside, "linked from outside the workspace"),
            )
            if count
        ]
        if skipped:
            notes.append("files skipped: " + ", ".join(skipped))
        body = (
            "\n".join(found.matches)
            if found.matches
            else f"no matches for {args.pattern!r} in {args.path!r}"
        )
        text = bound_text(body, ctx.max_output, hint="narrow the pattern or the path")
        text += "".join(f"\n[{note}]" for note in notes)
        # A match inside a secret file reveals its content: the label follows the files matched.
        return ToolOutput(text, label=ctx.label_for(found.files))


def _walk(where: Confined) -> Iterator[Path]:
    """The files under the target (or the target itself), in sorted order, lazily, so that a stop
    (matches, time, cancellation) also stops the directory walk. Symlinked directories are not
    followed; symlinked files are checked by `_scan`."""
    if not where.target.is_dir():
        yield where.target
        return
    for directory, subdirs, files in os.walk(where.target):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            yield Path(directory, name)
