"""Exports of a stored session: Markdown, JSON and self-contained HTML.

Every format is built from the same `SessionView`: the events redacted to `max_class` and the
transcript of those redacted events, so a limit hides the same items in every format.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal

from engine.events import Event
from engine.privacy import PrivacyClass
from engine.store.base import SessionInfo
from replay.export.as_html import to_html
from replay.export.as_json import to_json
from replay.export.as_markdown import to_markdown
from replay.export.view import SessionView, view_of

Format = Literal["md", "json", "html"]

FORMATS: dict[str, Callable[[SessionView], str]] = {
    "md": to_markdown,
    "json": to_json,
    "html": to_html,
}


def export(
    info: SessionInfo,
    events: Iterable[Event],
    fmt: str,
    *,
    max_class: PrivacyClass | None = None,
) -> str:
    """The session in `fmt` (`md`, `json` or `html`); `ValueError` names an unknown format."""
    render = FORMATS.get(fmt)
    if render is None:
        raise ValueError(f"unknown export format {fmt!r} (expected one of {', '.join(FORMATS)})")
    return render(view_of(info, events, max_class))


__all__ = ["FORMATS", "Format", "SessionView", "export", "view_of"]
