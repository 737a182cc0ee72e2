"""Provider-independent messages: what areas, hooks and the loop hand to a gateway."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engine.os_text import storable_os_text
from engine.privacy import PrivatizationLabel


class Role(StrEnum):
    system = "system"
    user = "user"
    assistant = "assistant"
    tool = "tool"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a message came from; `Source("user")` is the human's own words."""

    kind: str
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:
            raise ValueError("Source.kind must be a non-empty string")
        if ":" in self.kind:
            # `kind:name` is the stored form; a colon in kind would not read back the same.
            raise ValueError(f"Source.kind may not contain ':' (got {self.kind!r})")
        if not isinstance(self.name, str):
            raise TypeError("Source.name must be a string")

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind

    @classmethod
    def parse(cls, text: str) -> Source:
        """Inverse of `str()`: `kind` or `kind:name`."""
        kind, _, name = text.partition(":")
        return cls(kind, name)

    @property
    def is_user(self) -> bool:
        return self.kind == "user"


USER = Source("user")
PLUGIN = Source("plugin")


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned for the call `call_id`; an error result is still an answer."""

    call_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    """One generic message; assistant messages may carry tool calls."""

    role: Role
    content: str
    source: Source | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    is_error: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.content, str):
            raise TypeError(f"Message content must be str, not {type(self.content).__name__}")


@dataclass(frozen=True, slots=True)
class AdditionalContext:
    """Model-facing context with its provenance; the one shape `inject()` and hooks produce.

    `label` is the privacy class its producer declares; None means internal
    (docs/spec/context-orchestration.md, privacy).
    """

    content: str
    source: Source = PLUGIN
    label: PrivatizationLabel | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.content, str):
            raise TypeError(
                f"AdditionalContext content must be str, not {type(self.content).__name__}"
            )
        if not isinstance(self.source, Source):
            raise TypeError("AdditionalContext source must be a Source")
        if self.label is not None and not isinstance(self.label, PrivatizationLabel):
            raise TypeError("AdditionalContext label must be a PrivatizationLabel or None")
        # text with undecodable OS bytes is kept, escaped, rather than refused by the log
        object.__setattr__(self, "content", storable_os_text(self.content))
