"""What the model sees of a user/message with attachments: each one named, its text in full, and a
link that no front end could read said to be one (it had looked like an empty file)."""

from __future__ import annotations

from engine.context.log_items import LINK_ONLY, user_message_text
from engine.events import Attachment, UserMessage
from engine.message import Source


def _message(*attachments: Attachment) -> UserMessage:
    return UserMessage(content="look", source=Source("user"), attachments=attachments)


def test_a_message_without_attachments_is_its_content() -> None:
    assert user_message_text(_message()) == "look"


def test_a_read_file_is_named_by_its_uri_with_its_type_and_text() -> None:
    text = user_message_text(
        _message(
            Attachment(name="a.py", uri="file:///ws/a.py", mime_type="text/x-python", text="x")
        )
    )
    assert (
        text == 'look\n\n<attachment name="file:///ws/a.py" type="text/x-python">\nx\n</attachment>'
    )


def test_a_link_without_text_is_told_as_a_link_not_an_empty_file() -> None:
    text = user_message_text(
        _message(
            Attachment(name="x", uri="https://example.com/x", mime_type=""),
            Attachment(name="notes.txt", text="kept"),
        )
    )
    assert text == (
        f'look\n\n<attachment name="https://example.com/x">\n{LINK_ONLY}\n</attachment>'
        '\n\n<attachment name="notes.txt" type="text/plain">\nkept\n</attachment>'
    )
