"""The record of a file change (`FileChangeRecord`, on `tool/result`): what write_file and
edit_file did, exact enough to put the file back, and only hashes where a text may not be kept."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.events import FileChangeRecord
from engine.privacy import PrivacyClass
from engine.tools import ToolContext, ToolOutput, default_registry
from engine.tools.builtins.file_record import RECORD_TEXT_BYTES
from engine.tools.front_end import FrontEndAccess, FrontEndError


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolOutput:
    return await default_registry().call(name, arguments, ctx)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def change_of(output: ToolOutput) -> FileChangeRecord:
    assert not output.is_error, output.content
    assert output.change is not None
    return output.change


async def test_a_new_file_is_recorded_as_not_there_before(ctx: ToolContext, root: Path) -> None:
    change = change_of(await call(ctx, "write_file", path="src/new.py", content="a\nb\n"))
    assert change == FileChangeRecord(
        path="src/new.py",
        existed=False,
        new_text="a\nb\n",
        new_sha256=sha("a\nb\n"),
        line=1,
        label=change.label,
    )
    assert change.restorable
    assert change.label is not None
    assert change.label.cls is PrivacyClass.internal


async def test_a_replaced_file_keeps_its_old_text_and_the_first_changed_line(
    ctx: ToolContext, root: Path
) -> None:
    change = change_of(
        await call(ctx, "write_file", path="hello.txt", content="one\ntwo\n3\nfour\nfive\n")
    )
    assert (change.existed, change.old_text, change.line) == (
        True,
        "one\ntwo\nthree\nfour\nfive\n",
        3,
    )
    assert change.old_sha256 == sha("one\ntwo\nthree\nfour\nfive\n")
    assert change.new_text == (root / "hello.txt").read_text()


async def test_an_edit_records_the_whole_file_before_and_after(
    ctx: ToolContext, root: Path
) -> None:
    change = change_of(await call(ctx, "edit_file", path="src/main.py", old="42", new="43"))
    assert change.old_text == "def main():\n    return 42\n"
    assert change.new_text == "def main():\n    return 43\n"
    assert (change.path, change.line, change.withheld) == ("src/main.py", 2, None)


async def test_a_secret_file_is_recorded_by_its_hashes_only(ctx: ToolContext, root: Path) -> None:
    change = change_of(await call(ctx, "edit_file", path=".env", old="sk-secret", new="sk-new"))
    assert (change.old_text, change.new_text, change.withheld) == (None, None, "secret")
    assert change.old_sha256 == sha("API_KEY=sk-secret\n")
    assert change.new_sha256 == sha("API_KEY=sk-new\n")
    assert change.label is not None
    assert change.label.cls is PrivacyClass.restricted
    assert "sk-" not in change.model_dump_json()
    assert not change.restorable


async def test_a_text_past_the_cap_is_recorded_by_its_hash(ctx: ToolContext, root: Path) -> None:
    big = "x" * (RECORD_TEXT_BYTES + 1)
    (root / "big.txt").write_text(big)
    change = change_of(await call(ctx, "write_file", path="big.txt", content="small\n"))
    assert (change.old_text, change.new_text, change.withheld) == (None, "small\n", "size")
    assert change.old_sha256 == sha(big)
    grown = change_of(await call(ctx, "write_file", path="small.txt", content=big))
    assert (grown.new_text, grown.new_sha256, grown.withheld) == (None, sha(big), "size")


async def test_a_replaced_binary_file_is_recorded_by_its_hash(ctx: ToolContext, root: Path) -> None:
    data = (root / "blob.bin").read_bytes()
    change = change_of(await call(ctx, "write_file", path="blob.bin", content="text\n"))
    assert (change.existed, change.old_text, change.withheld) == (True, None, "binary")
    assert change.old_sha256 == hashlib.sha256(data).hexdigest()


class Editor:
    """An editor's buffers that answers a file it has no buffer for as the client chooses: an
    error (most clients) or an empty text (Toad)."""

    def __init__(self, missing: str) -> None:
        self.missing = missing
        self.texts: dict[Path, str] = {}

    async def read_text(self, path: Path) -> str:
        if path in self.texts:
            return self.texts[path]
        if self.missing == "error":
            raise FrontEndError("the client answered fs/read_text_file with error -32603: ENOENT")
        return ""

    async def write_text(self, path: Path, content: str) -> None:
        self.texts[path] = content


async def test_a_file_the_client_cannot_read_and_the_disk_lacks_is_no_such_file(
    ctx: ToolContext, root: Path
) -> None:
    for missing in ("error", "empty"):
        editor = Editor(missing)
        lent = replace(ctx, front_end=FrontEndAccess(reader=editor, writer=editor))
        read = await call(lent, "read_file", path="gone.txt")
        assert (read.is_error, read.content) == (True, "file 'gone.txt' not found"), missing
        edited = await call(lent, "edit_file", path="gone.txt", old="a", new="b")
        assert (edited.is_error, edited.content) == (True, "file 'gone.txt' not found")
        written = await call(lent, "write_file", path="gone.txt", content="new\n")
        assert written.content.startswith("created gone.txt"), missing
        assert change_of(written).existed is False
        assert change_of(written).old_sha256 is None
    empty = root / "empty.txt"
    empty.write_text("")
    editor = Editor("empty")
    lent = replace(ctx, front_end=FrontEndAccess(reader=editor, writer=editor))
    read = await call(lent, "read_file", path="empty.txt")
    assert not read.is_error  # an empty file on disk is an empty file
