"""The one escape for OS text that is not UTF-8: reversible, unambiguous, always storable."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from engine.os_text import escape_os_text, is_storable, storable_os_text, unescape_os_text

# Names as POSIX hands them to Python: any bytes, decoded with surrogateescape.
os_names = st.binary(max_size=40).map(os.fsdecode)
# Any text, rich in what the escape deals with: lone surrogates, backslashes, escape look-alikes.
any_text = st.lists(
    st.one_of(
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.sampled_from(["\\", "x", "e9", "ud", "c8", "\\xe9", "\\udce9"]),
        st.characters(),
    ),
    max_size=20,
).map("".join)


@given(any_text)
def test_escape_is_storable_and_unescape_undoes_it(text: str) -> None:
    escaped = escape_os_text(text)
    assert is_storable(escaped)
    assert unescape_os_text(escaped) == text


@given(os_names, os_names)
def test_two_different_names_never_look_the_same(one: str, two: str) -> None:
    if one != two:
        assert escape_os_text(one) != escape_os_text(two)


def test_the_escape_names_the_bytes() -> None:
    name = os.fsdecode(b"caf\xe9 a\\b.txt")
    assert escape_os_text(name) == "caf\\xe9 a\\\\b.txt"
    assert os.fsencode(unescape_os_text("caf\\xe9 a\\\\b.txt")) == b"caf\xe9 a\\b.txt"
    # a literal name that looks like an escape stays distinct from the byte it looks like
    assert escape_os_text("caf\\xe9") == "caf\\\\xe9"
    assert unescape_os_text("a\\b \\n") == "a\\b \\n"  # a backslash that starts no escape stays


def test_free_text_stays_verbatim_unless_it_must_be_escaped() -> None:
    assert storable_os_text("match \\d+ in C:\\src") == "match \\d+ in C:\\src"
    typed = os.fsdecode(b"caf\xe9 \\d")
    assert storable_os_text(typed) == "caf\\xe9 \\\\d"
    assert os.fsencode(unescape_os_text(storable_os_text(typed))) == b"caf\xe9 \\d"
