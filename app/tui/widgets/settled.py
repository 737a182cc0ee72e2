"""A finished reply's Markdown: composed with its widget, and, when long, in parts of which only
those near the view are composed.

Composed whole, a long reply composes, styles and lays out thousands of widgets before the first
paint, a blank screen meanwhile (the entry window bounds entries, not what one holds). So a long
finished reply is cut into parts of about `PART_CHARS`; the part the view opens on is composed,
and the parts on either side wait behind a one-line `Deferred` marker until the view scrolls near
it (`TranscriptView` composes the next one, keeping what the user reads still).
"""

from __future__ import annotations

import re
from itertools import pairwise

from rich.text import Text
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownBlock

REPLY_END = "-reply-end"
"""The class of a reply's last block (no bottom margin)."""
REPLY_START = "-reply-start"
"""The class of a reply's first block (a heading there has no top margin)."""

LONG_CHARS = 12_000
"""A finished reply this long or longer is composed in parts (at 80 columns some 150 lines);
shorter ones, most, in one piece."""
PART_CHARS = 1_500
"""The size of a part, about: at 80 columns some 20 lines. A resumed 91 KB reply painted in 1.4 s
with parts of 2,000 characters and 0.9 s with 1,000 (0.3 s a short session, on the same load)."""

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)\s*$")
_UNCUTTABLE = re.compile(  # link references a later part may use; HTML spanning blank lines
    r"^ {0,3}(\[[^\]]+\]:|<(pre|script|style|textarea|!--))", re.MULTILINE | re.IGNORECASE
)
_TABLE_DELIMITER = re.compile(r"\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_NOT_A_PARAGRAPH = re.compile(r"[\s#>|<\-*+=_`~\[]|\d+[.)]")


def settled_parts(source: str, size: int = PART_CHARS, *, least: int = LONG_CHARS) -> list[str]:
    """`source` cut into parts of at least `size` characters, each after the first starting with
    a plain paragraph after a blank line, outside any code fence: in a Markdown of its own each
    then stands exactly as in one (a paragraph has no top margin to collapse into the block
    before it). One part when the source is shorter than `least`, has no such place, defines
    link references (a later part may use them) or holds HTML that may span blank lines."""
    if len(source) < max(least, 2 * size) or _UNCUTTABLE.search(source):
        return [source]
    lines = source.splitlines(keepends=True)
    cuts: list[int] = []
    fence: str | None = None
    offset = start = 0
    for index, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence is None and opened is not None:
            fence = opened.group(1)
        elif fence is not None:
            if opened is not None and _closes(fence, line):
                fence = None
        elif (
            offset - start >= size
            and index > 0
            and not lines[index - 1].strip()
            and line.strip()
            and not _NOT_A_PARAGRAPH.match(line)
            and not (index + 1 < len(lines) and _underlines(lines[index + 1]))
        ):
            cuts.append(offset)
            start = offset
        offset += len(line)
    if cuts and len(source) - cuts[-1] < size:
        cuts.pop()  # the last part would be short: the one before it takes it
    bounds = [0, *cuts, len(source)]
    return [source[a:b] for a, b in pairwise(bounds)]


def _underlines(line: str) -> bool:
    """Whether `line` makes the line before it a heading or a table's header, not a paragraph."""
    return bool(_SETEXT_UNDERLINE.match(line) or ("|" in line and _TABLE_DELIMITER.match(line)))


def _closes(fence: str, line: str) -> bool:
    """Whether `line` closes a code fence opened by `fence` (the same character, at least as
    many, nothing after)."""
    stripped = line.strip()
    return stripped.startswith(fence) and set(stripped) == {fence[0]}


class SettledMarkdown(Markdown):
    """A finished reply's Markdown (or a part of a long one). `start` and `end`: it holds the
    reply's start (its first block is marked `REPLY_START`) or its end (its last block has no
    bottom margin), marked once its blocks are mounted."""

    def __init__(
        self, markdown: str, *, start: bool = True, end: bool = True, id: str | None = None
    ) -> None:
        super().__init__(markdown, id=id)
        self._start = start
        self._end = end

    def on_markdown_table_of_contents_updated(self, event: Markdown.TableOfContentsUpdated) -> None:
        """The blocks are mounted (Textual says so with this message after each update)."""
        if event.markdown is not self:
            return
        event.stop()
        blocks = list(self.query_children(MarkdownBlock))
        if blocks and self._start:
            blocks[0].add_class(REPLY_START)
        if blocks and self._end:
            blocks[-1].add_class(REPLY_END)


class Deferred(Static):
    """The parts of a long reply not composed yet on one side of those that are, as one line;
    `take` gives the next to compose (the nearest), `parts` what is left."""

    DEFAULT_CSS = """
    Deferred {
        color: $text-muted;
        text-style: italic;
        margin: 0 0 1 0;
    }
    Deferred.-below {
        margin: 0;  /* the reply's end */
    }
    """

    def __init__(self, parts: list[str], *, above: bool) -> None:
        super().__init__()
        self.parts = parts
        self.above = above
        self.set_class(not above, "-below")
        self._say()

    def take(self) -> str:
        part = self.parts.pop() if self.above else self.parts.pop(0)
        self._say()
        return part

    def _say(self) -> None:
        chars = sum(map(len, self.parts))
        where = "above" if self.above else "below"
        self.update(Text(f"⋯ {chars:,} more characters of this reply {where}"))
