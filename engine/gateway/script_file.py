"""A script file for the scripted model (`trellis run --script FILE`): its schema and its reading.

Apart from `engine.gateway.scripted` so that only the runs that read a script import the models;
they are built when the first script is read (`defer_build`).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.events import Finish, Usage
from engine.gateway.scripted import Reply, ScriptError
from engine.message import ToolCall


class _ToolCallSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str = ""


class _ReplySpec(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    text: str = ""
    reasoning: str = ""
    tool_calls: list[_ToolCallSpec] = Field(default_factory=list)
    chunk_delay: float = Field(default=0.0, ge=0)
    error: str | None = None
    transient: bool = False
    status: int | None = None
    finish: Finish | None = None
    usage: Usage | None = None
    provider_state: dict[str, Any] = Field(default_factory=dict)

    def to_reply(self) -> Reply:
        return Reply(
            text=self.text,
            reasoning=self.reasoning,
            tool_calls=[ToolCall(c.id, c.name, c.arguments) for c in self.tool_calls],
            chunk_delay=self.chunk_delay,
            error=self.error,
            transient=self.transient,
            status=self.status,
            finish=self.finish,
            usage=self.usage,
            provider_state=self.provider_state,
        )


class _ScriptSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    replies: list[_ReplySpec]


def load_script(path: str | Path) -> list[Reply]:
    """The replies of a script file: JSON (`{"replies": [...]}` or a list) or TOML (`[[replies]]`).

    Raises `ScriptError` naming the file, and the reply and key at fault.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise ScriptError(f"{path}: a script must be a .json or .toml file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptError(f"{path}: cannot read the script: {exc}") from exc
    raw: Any
    try:
        raw = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ScriptError(f"{path}: not valid {suffix[1:].upper()}: {exc}") from exc
    if isinstance(raw, list):
        raw = {"replies": raw}
    try:
        spec = _ScriptSpec.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{_location(error['loc'])}: {error['msg']}" for error in exc.errors()[:5]
        )
        raise ScriptError(f"{path}: {problems}") from None
    return [reply.to_reply() for reply in spec.replies]


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text or "script"
