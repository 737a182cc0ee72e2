"""Text from the operating system in a log that holds only Unicode: one reversible escape.

POSIX names and arguments are bytes. Python decodes them with `surrogateescape`, so a byte that is
not UTF-8 arrives as a lone surrogate (0xE9 as U+DCE9), which no JSON event can hold. Such a
character is written `\\xe9` (any other lone surrogate `\\ud` and its three hex digits) and, so that the escape is never
ambiguous, a backslash is written `\\\\`. `unescape_os_text` undoes exactly that, so a name the model
was shown leads back to the same bytes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_SURROGATE_ESCAPED = range(0xDC80, 0xDD00)
"""The surrogates `surrogateescape` makes from the bytes 0x80-0xFF."""

_NEEDS_ESCAPE = re.compile(r"[\\\ud800-\udfff]")
_ESCAPE = re.compile(r"\\(\\|x[89a-fA-F][0-9a-fA-F]|u[dD][89a-fA-F][0-9a-fA-F]{2})")


def _escape_one(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\\":
        return "\\\\"
    code = ord(char)
    if code in _SURROGATE_ESCAPED:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def _unescape_one(match: re.Match[str]) -> str:
    body = match.group(1)
    if body == "\\":
        return "\\"
    if body[0] == "x":
        return chr(0xDC00 + int(body[1:], 16))
    return chr(int(body[1:], 16))


def escape_os_text(text: str) -> str:
    """The name as it enters an event: undecodable bytes as `\\xNN`, backslashes doubled.

    Injective, so two different names never look the same; used for every file name a tool shows.
    """
    return _NEEDS_ESCAPE.sub(_escape_one, text)


def unescape_os_text(text: str) -> str:
    """The inverse of `escape_os_text`; a backslash that starts no escape is kept as it is."""
    return _ESCAPE.sub(_unescape_one, text)


def is_storable(text: str) -> bool:
    """Whether `text` can enter an event as it is (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storable_os_text(text: str) -> str:
    """Free text from the OS (a prompt from argv, a working directory): verbatim when it is
    Unicode, else escaped like a name, so ordinary text keeps its backslashes as typed."""
    return text if is_storable(text) else escape_os_text(text)


def stored_os_path(text: str) -> Path:
    """The path that OS text stored by `storable_os_text` names (a session's working directory).

    The escape is undone; since Unicode text is stored verbatim, a path that exists only as
    written (a directory literally named `caf\\xe9`) is taken as written. Touches the file system.
    """
    raw = unescape_os_text(text)
    if raw != text and not os.path.lexists(raw) and os.path.lexists(text):
        return Path(text)
    return Path(raw)
