"""What an MCP tool looks like to the model: its name in the providers' charset, its argument
schema, and a minimal check of the arguments against that schema.

The check covers what a model most often gets wrong — a missing required argument, an unknown one
where the schema forbids extras, a value of the wrong JSON type — so it can retry with a clear
message before anything is sent. Everything deeper (nested objects, formats, ranges) is left to
the server, which validates its own arguments and answers with an error result.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from engine.tools.tool import _strip_titles

MAX_TOOL_NAME = 64
"""The longest tool name every provider accepts."""

HASH_CHARS = 8
"""How many hex digits of the full name's hash a shortened or disambiguated name ends with."""

MAX_SHOWN_INPUT = 80
"""How much of a rejected argument value is quoted back to the model (as the registry does)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def tool_name(server: str, tool: str, *, hashed: bool = False) -> str:
    """`<server>__<tool>` in `[A-Za-z0-9_-]`, at most 64 characters.

    Unsafe characters become `_`. A name that is too long, or `hashed` (to tell apart two names
    that sanitize alike), keeps a hash of the original so it stays unique and stable.
    """
    original = f"{server}__{tool}"
    name = _UNSAFE.sub("_", original)
    if len(name) <= MAX_TOOL_NAME and not hashed:
        return name
    digest = hashlib.sha256(original.encode()).hexdigest()[:HASH_CHARS]
    return f"{name[: MAX_TOOL_NAME - HASH_CHARS - 1]}_{digest}"


def input_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The server's input schema as the model sees it: an object schema, without generated titles."""
    cleaned: dict[str, Any] = _strip_titles(dict(schema))
    cleaned.pop("$schema", None)
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    return cleaned


def argument_problems(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """One line per top-level problem of `arguments` against `schema`; empty when none is found."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    problems = [
        f"{name}: required but missing"
        for name in schema.get("required") or ()
        if name not in arguments
    ]
    for name, value in arguments.items():
        declared = properties.get(name)
        if declared is None:
            if schema.get("additionalProperties") is False:
                problems.append(f"{name}: unknown argument")
            continue
        expected = declared.get("type") if isinstance(declared, Mapping) else None
        if expected is not None and not _has_type(value, expected):
            shown = repr(value)
            if len(shown) > MAX_SHOWN_INPUT:
                shown = shown[:MAX_SHOWN_INPUT] + "..."
            wanted = expected if isinstance(expected, str) else " or ".join(map(str, expected))
            problems.append(f"{name}: expected {wanted} (got {shown})")
    return problems


def describe_parameters(schema: Mapping[str, Any]) -> str:
    """The parameters a tool takes, marked `(required)`, as the registry lists them."""
    required = set(schema.get("required") or ())
    names = [
        f"{name}{' (required)' if name in required else ''}"
        for name in schema.get("properties") or {}
    ]
    return ", ".join(names) or "none"


def _has_type(value: Any, expected: Any) -> bool:
    names = [expected] if isinstance(expected, str) else list(expected or ())
    known = [name for name in names if name in _JSON_TYPES]
    if not known:
        return True  # a type this check does not know is the server's to judge
    for name in known:
        if isinstance(value, bool) and name != "boolean":
            continue  # JSON keeps booleans and numbers apart; Python does not
        if name == "integer" and isinstance(value, float):
            if value.is_integer():
                return True
            continue
        if isinstance(value, _JSON_TYPES[name]):
            return True
    return False
