"""A workspace file read as a prompt attachment: the console's `@path` and an ACP client's
`resource_link` to a file of the session's workspace both attach the file's text this way."""

from __future__ import annotations

import re
from pathlib import Path

from engine.events import Attachment
from engine.tools.workspace import NotRegularFileError, open_regular, resolve_shown_path

ATTACHMENT_MAX_BYTES = 256 * 1024


class AttachmentError(ValueError):
    """The file cannot be attached; the message says why, naming the file as it was written."""


class BinaryAttachmentError(AttachmentError):
    """The file holds a NUL byte in what is read: bytes, not text the model could read."""

    def __init__(self, shown: str) -> None:
        super().__init__(f"{shown!r} is not a text file")


def read_attachment(root: Path, shown: str) -> Attachment:
    """The file `shown` (relative to `root`, or absolute inside it), named so, with its text cut
    after `ATTACHMENT_MAX_BYTES`.

    Raises `ValueError` (outside the workspace), or `AttachmentError` (missing, not a regular
    file, unreadable, binary), each naming `shown`: one wording for a file that cannot be read
    and a file in a folder that cannot be searched.
    """
    path = resolve_shown_path(root, shown)
    try:
        with open_regular(path, shown) as handle:
            data = handle.read(ATTACHMENT_MAX_BYTES + 1)
    except NotRegularFileError as error:
        raise AttachmentError(str(error)) from None
    except OSError as error:
        raise AttachmentError(f"cannot read {shown!r}: {error.strerror or error}") from None
    if b"\x00" in data:
        raise BinaryAttachmentError(shown)
    body = data[:ATTACHMENT_MAX_BYTES].decode("utf-8", errors="replace")
    if len(data) > ATTACHMENT_MAX_BYTES:
        body += f"\n[attachment cut at {ATTACHMENT_MAX_BYTES} bytes]"
    return Attachment(name=shown, uri=path.as_uri(), text=body)


MENTION = re.compile(r"(?:^|\s)@(\S+)")
"""A file the words mention, as `@path`: the console and `trellis run` attach it."""
TRAILING_PUNCTUATION = ".,;:!?)]}'\""


def attachments_of(text: str, root: Path) -> tuple[list[Attachment], list[str]]:
    """The files the prompt mentions as `@path`, read (bounded), and the problems with any that
    could not be attached (outside the workspace, missing, not a regular file, binary)."""
    attached: list[Attachment] = []
    problems: list[str] = []
    for mention in dict.fromkeys(MENTION.findall(text)):
        # `see @a.md, then` names a.md: the punctuation of the sentence is not the file's,
        # unless a file is named with it
        bare = mention.rstrip(TRAILING_PUNCTUATION)
        try:
            attached.append(read_attachment(root, mention))
        except ValueError as exc:  # outside the workspace, or cannot be read: named in it
            if bare == mention or not bare:
                problems.append(str(exc))
                continue
            try:
                attached.append(read_attachment(root, bare))
            except ValueError as bare_exc:
                problems.append(str(bare_exc))
    return attached, problems
