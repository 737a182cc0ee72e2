"""The JSON Schema of the JSON export, derived from the event models so it cannot drift from them.

`docs/session-export.schema.json` holds its output; a test checks the two are equal
(`python -m replay.export.schema > docs/session-export.schema.json` writes it again).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic.json_schema import models_json_schema

from engine.events import PAYLOADS, Scope
from engine.privacy import PrivacyClass
from replay.export.as_json import EXPORT_FORMAT, EXPORT_VERSION

_CLASSES = [c.name for c in PrivacyClass]


def _event_schema(event_type: str, ref: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "seq": {"type": "integer", "minimum": 0},
            "time": {"type": "number"},
            "type": {"const": event_type},
            "data": ref,
            "redacted": {
                "enum": _CLASSES,
                "description": "Present when the content was above the export's max_class: "
                "each text of `data` is then a `[redacted: CLASS]` marker.",
            },
        },
        "required": ["seq", "time", "type", "data"],
        "additionalProperties": False,
    }


def export_schema() -> dict[str, Any]:
    durable = [(t, cls) for t, cls in PAYLOADS.items() if cls.scope is not Scope.live]
    refs, definitions = models_json_schema(
        [(cls, "serialization") for _, cls in durable], ref_template="#/$defs/{model}"
    )
    defs = definitions["$defs"]
    defs["PrivatizationLabel"]["properties"]["cls"] = {"enum": _CLASSES}
    # no longer referenced; whether pydantic emits it depends on the order the (lazily built)
    # payload models were built in, so it is dropped for one schema whatever ran first
    defs.pop("PrivacyClass", None)
    session = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "title": {"type": "string"},
            "cwd": {"type": "string"},
            "model": {"type": "string"},
            "created": {"type": "number"},
            "updated": {"type": "number"},
            "turns": {"type": "integer", "minimum": 0},
            "events": {"type": "integer", "minimum": 0},
            "parent": {"type": ["string", "null"]},
            "fork_seq": {"type": ["integer", "null"]},
        },
        "required": [
            "id",
            "title",
            "cwd",
            "model",
            "created",
            "updated",
            "turns",
            "events",
            "parent",
            "fork_seq",
        ],
        "additionalProperties": False,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Trellis session export",
        "description": "A stored session: a header, then every durable event of its log in order.",
        "type": "object",
        "properties": {
            "format": {"const": EXPORT_FORMAT},
            "version": {"const": EXPORT_VERSION},
            "session": session,
            "max_class": {"enum": [*_CLASSES, None]},
            "usage": {
                "$ref": "#/$defs/Usage",
                "description": "Every step's tokens, in parts that do not overlap.",
            },
            "cost": {
                "type": "object",
                "description": "What the steps cost, per ISO 4217 currency; empty when no step "
                "was priced.",
                "propertyNames": {"pattern": "^[A-Z]{3}$"},
                "additionalProperties": {"type": "number"},
            },
            "events": {
                "type": "array",
                "items": {
                    "oneOf": [_event_schema(t, refs[(cls, "serialization")]) for t, cls in durable]
                },
            },
        },
        "required": ["format", "version", "session", "max_class", "usage", "cost", "events"],
        "additionalProperties": False,
        "$defs": defs,
    }


def schema_text() -> str:
    return json.dumps(export_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(schema_text(), end="")
