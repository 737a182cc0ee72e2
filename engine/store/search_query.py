"""What `trellis search` takes: a small query language of its own, the same on every store.

Words must all appear (`cache prefix`); `"a phrase"` in that order; `word*` any word starting so;
`a OR b` either; `-word` or `-"a phrase"` not. Matching is by word, ignoring case (SQLite also
ignores accents). A word with punctuation in it (`read_file`, `app.py`) is the phrase of its
parts, as the index splits it. Neither SQLite's FTS5 syntax nor PostgreSQL's tsquery syntax is
exposed: a user typing `foo.py` or `what's` means the words, and each store is given a query
built from this parse, so a query that parses never fails in the database.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from engine.store.errors import SearchSyntaxError


@dataclass(frozen=True, slots=True)
class Term:
    """One word or phrase: `words` as the index splits them; `prefix` for `word*`."""

    words: tuple[str, ...]
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class Clause:
    """Terms of which one must match (`a OR b`), or, `negated`, none may."""

    terms: tuple[Term, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """Clauses that must all hold."""

    text: str
    clauses: tuple[Clause, ...]

    @property
    def wanted(self) -> tuple[Term, ...]:
        """The terms a hit may contain (what a snippet marks)."""
        return tuple(t for c in self.clauses if not c.negated for t in c.terms)


_WORD = re.compile(r"[^\W_]+")
"""A word as SQLite's unicode61 tokenizer sees one: letters and digits; `_` separates."""
_TOKEN = re.compile(r'\s*(?:(-?)"([^"]*)("?)|(\S+))')


def fold(text: str) -> str:
    """Lower case without accents: how both the index and a snippet compare words."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words_of(text: str) -> tuple[str, ...]:
    """The words the index sees in `text`, folded."""
    return tuple(_WORD.findall(fold(text)))


def parse_query(text: str) -> SearchQuery:
    """Parse a query; `SearchSyntaxError` naming the mistake."""
    clauses: list[Clause] = []
    pending_or = False
    for match in _TOKEN.finditer(text):
        minus, phrase, closed, bare = match.groups()
        if bare is None and phrase is None:
            continue
        if bare == "OR":
            if not clauses or clauses[-1].negated or pending_or:
                raise SearchSyntaxError(
                    f"search {text!r}: OR needs a word or phrase on each side (`cache OR prefix`)"
                )
            pending_or = True
            continue
        if phrase is not None:
            if not closed:
                raise SearchSyntaxError(
                    f'search {text!r}: a phrase opened with " is not closed; end it with "'
                )
            negated, term = bool(minus), _term(phrase, prefix=False)
        else:
            negated = bare.startswith("-") and len(bare) > 1
            body = bare[1:] if negated else bare
            prefix = body.endswith("*")
            term = _term(body.rstrip("*") if prefix else body, prefix=prefix)
        if term is None:  # punctuation alone (`&`, `-`): no word the index could hold
            continue
        if pending_or:
            if negated:
                raise SearchSyntaxError(
                    f"search {text!r}: OR cannot join an excluded word; write `-a -b` to exclude both"
                )
            last = clauses.pop()
            clauses.append(Clause((*last.terms, term)))
            pending_or = False
        else:
            clauses.append(Clause((term,), negated=negated))
    if pending_or:
        raise SearchSyntaxError(
            f"search {text!r}: OR needs a word or phrase on each side (`cache OR prefix`)"
        )
    if not any(not c.negated for c in clauses):
        what = "only excludes words" if clauses else "has no word to find (letters or digits)"
        raise SearchSyntaxError(f"search {text!r}: the query {what}; give a word to find")
    return SearchQuery(text=text, clauses=tuple(clauses))


def _term(text: str, *, prefix: bool) -> Term | None:
    words = words_of(text)
    return Term(words, prefix=prefix) if words else None


def fts5_match(query: SearchQuery) -> str:
    """The query as an FTS5 MATCH expression: every term a quoted phrase of plain words, so
    nothing the user typed is read as FTS5 syntax."""

    def term(t: Term) -> str:
        return '"' + " ".join(t.words) + '"' + (" *" if t.prefix else "")

    def clause(c: Clause) -> str:
        inner = " OR ".join(term(t) for t in c.terms)
        return f"({inner})" if len(c.terms) > 1 else inner

    wanted = " AND ".join(clause(c) for c in query.clauses if not c.negated)
    unwanted = "".join(f" NOT {clause(c)}" for c in query.clauses if c.negated)
    return f"({wanted}){unwanted}" if unwanted else wanted


def tsquery_text(query: SearchQuery) -> str:
    """The query as PostgreSQL `to_tsquery('simple', ...)` text: each word a quoted lexeme
    (words are letters and digits, so no quote or operator can be in one), a phrase joined by `<->`."""

    def term(t: Term) -> str:
        lexemes = [f"'{w}'" for w in t.words]
        if t.prefix:
            lexemes[-1] += ":*"
        joined = " <-> ".join(lexemes)
        return f"({joined})" if len(lexemes) > 1 else joined

    def clause(c: Clause) -> str:
        inner = " | ".join(term(t) for t in c.terms)
        inner = f"({inner})" if len(c.terms) > 1 else inner
        return f"!{inner}" if c.negated else inner

    return " & ".join(clause(c) for c in query.clauses)
