"""A workspace file read as a prompt attachment: the console's `@path` and an ACP client's
`resource_link` to a file of the session's workspace both attach the file's text this way."""

from __future__ import annotations

from pathlib import Path

from engine.events import Attachment
from engine.tools.workspace import open_regular, resolve_shown_path

ATTACHMENT_MAX_BYTES = 256 * 1024


class BinaryAttachmentError(ValueError):
    """The file holds a NUL byte in what is read: bytes, not text the model could read."""

    def __init__(self, shown: str) -> None:
        super().__init__(f"{shown} is not a text file")


def read_attachment(root: Path, shown: str) -> Attachment:
    """The file `shown` (relative to `root`, or absolute inside it), named so, with its text cut
    after `ATTACHMENT_MAX_BYTES`.

    Raises `ValueError` (outside the workspace, a binary file) or `OSError` (missing, not a
    regular file, unreadable), each naming `shown`.
    """
    path = resolve_shown_path(root, shown)
    with open_regular(path, shown) as handle:
        data = handle.read(ATTACHMENT_MAX_BYTES + 1)
    if b"\x00" in data:
        raise BinaryAttachmentError(shown)
    body = data[:ATTACHMENT_MAX_BYTES].decode("utf-8", errors="replace")
    if len(data) > ATTACHMENT_MAX_BYTES:
        body += f"\n[attachment cut at {ATTACHMENT_MAX_BYTES} bytes]"
    return Attachment(name=shown, uri=path.as_uri(), text=body)
