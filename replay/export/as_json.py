"""The JSON export: a header, then one object per event (schema: docs/session-export.schema.json)."""

from __future__ import annotations

import json
from typing import Any

from replay.export.view import SessionView

EXPORT_FORMAT = "trellis.session"
EXPORT_VERSION = 1


def export_object(view: SessionView) -> dict[str, Any]:
    """The export as a JSON-ready object; a redacted event says which class it hid."""
    events: list[dict[str, Any]] = []
    for event, hidden in zip(view.events, view.hidden, strict=True):
        item = event.model_dump(mode="json")
        if hidden is not None:
            item["redacted"] = hidden.name
        events.append(item)
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "session": {**view.info.record(), "title": view.title},
        "max_class": None if view.max_class is None else view.max_class.name,
        "usage": view.usage.model_dump(mode="json"),
        "cost": view.cost,
        "events": events,
    }


def to_json(view: SessionView) -> str:
    return json.dumps(export_object(view), ensure_ascii=False, indent=1) + "\n"
