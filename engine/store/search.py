"""Search results as every store returns them, and the snippet that shows why each one matched.

The snippet is cut here from the event's text, not by the database: SQLite's index keeps no copy
of the text (the log has it), and PostgreSQL's `ts_headline` parses the whole document again;
one function gives both stores the same snippets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.store.search_query import SearchQuery, Term, fold
from engine.store.search_text import indexed_text

SNIPPET_CHARS = 160
"""Characters of text around the first match a snippet shows."""
SEARCH_LIMIT = 20
"""Hits a search returns unless told otherwise."""

_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchHit:
    """One matching event: where it is, what kind of text it is, and a snippet with the matched
    words' spans (`marks`, offsets into `snippet`). `data` is the stored payload (JSON), so a
    front end can apply a privacy limit to it as exports do."""

    session_id: str
    title: str
    cwd: str
    seq: int
    turn: int  # the turn it belongs to or follows (0: before the first)
    time: float
    kind: str  # user, injected, assistant, tool
    type: str  # the event type
    score: float  # higher ranks first
    snippet: str
    marks: tuple[tuple[int, int], ...] = ()
    data: str = field(default="", repr=False)

    def record(self) -> dict[str, Any]:
        """The hit as `trellis search --json` prints it."""
        return {
            "session": self.session_id,
            "title": self.title,
            "cwd": self.cwd,
            "turn": self.turn,
            "seq": self.seq,
            "time": self.time,
            "kind": self.kind,
            "type": self.type,
            "score": round(self.score, 6),
            "snippet": self.snippet,
            "marks": [list(m) for m in self.marks],
        }


def snippet(
    text: str, query: SearchQuery, width: int = SNIPPET_CHARS
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """About `width` characters of `text` on one line around the first matched term, and the
    spans of the matched words in it; the start of the text when no term is found in it."""
    tokens = [(m.start(), m.end(), fold(m.group())) for m in _WORD.finditer(text)]
    spans = _matches(tokens, query.wanted)
    first = spans[0][0] if spans else 0
    start = max(0, first - width // 3)
    if start > 0:  # start at a word
        space = text.rfind(" ", 0, start)
        start = space + 1 if space >= 0 and first - space < width // 2 else start
    end = min(len(text), start + width)
    shown = text[start:end]
    lead = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    flat = lead + re.sub(r"\s", " ", shown) + tail  # one line; same length per character
    shift = len(lead) - start
    marks = tuple((a + shift, b + shift) for a, b in spans if a >= start and b <= end)
    return flat, marks


def _matches(tokens: list[tuple[int, int, str]], terms: tuple[Term, ...]) -> list[tuple[int, int]]:
    """The spans of each word of `tokens` that belongs to an occurrence of a term."""
    spans: set[tuple[int, int]] = set()
    for term in terms:
        n = len(term.words)
        for i in range(len(tokens) - n + 1):
            window = tokens[i : i + n]
            if all(
                tok == word or (term.prefix and k == n - 1 and tok.startswith(word))
                for k, ((_, _, tok), word) in enumerate(zip(window, term.words, strict=True))
            ):
                spans.update((a, b) for a, b, _ in window)
    return sorted(spans)


def hit_of(row: Sequence[object], query: SearchQuery) -> SearchHit:
    """A hit from a row (session, title, cwd, seq, time, type, data, score, turn) whose score
    ranks a lower one first, as SQLite's bm25 does (PostgreSQL's rank is passed negated)."""
    session_id, title, cwd, seq, time, kind, data, score, turn = row
    found = indexed_text(str(kind), str(data))
    text = found.text if found is not None else ""
    shown, marks = snippet(text, query)
    return SearchHit(
        session_id=str(session_id),
        title=str(title),
        cwd=str(cwd),
        seq=int(seq),  # type: ignore[call-overload]
        turn=int(turn),  # type: ignore[call-overload]
        time=float(time),  # type: ignore[arg-type]
        kind=found.kind if found is not None else "",
        type=str(kind),
        score=-float(score),  # type: ignore[arg-type]
        snippet=shown,
        marks=marks,
        data=str(data),
    )
