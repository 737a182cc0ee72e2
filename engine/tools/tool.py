"""The Tool concept: a named, schema-described action the model may call, and what it returns."""

from __future__ import annotations

import fnmatch
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from engine.events import FileChangeRecord
from engine.gateway.base import ToolSpec
from engine.message import AdditionalContext
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.tools.front_end import LOCAL, FrontEndAccess

DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (".env*", "*.pem", "*.key", "id_*", "*credentials*")


class ToolKind(StrEnum):
    """What a tool does, so front ends can pick an icon and permission prompts can say it."""

    read = "read"
    edit = "edit"
    search = "search"
    execute = "execute"
    other = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """Everything a tool may know about the call it serves; limits are explicit fields.

    Cancellation: the loop runs each call as an asyncio task and cancels that task; a tool learns
    of it as `CancelledError` at its next `await` and must release what it holds (run_shell kills
    its process group) before letting the error propagate.
    """

    root: Path
    max_output: int = 100_000
    timeout: float = 120.0
    """Seconds a call waits by default: run_shell's command, a front end's answer to a file tool."""
    max_timeout: float = 600.0
    secret_patterns: tuple[str, ...] = DEFAULT_SECRET_PATTERNS
    shell_class: PrivacyClass = PrivacyClass.internal
    call_id: str = ""
    on_output: Callable[[str], None] | None = None
    """Receives output as it arrives (a live `tool/output`); the returned result stays the record."""
    protected_paths: tuple[Path, ...] = ()
    """Files the write tools refuse besides any `.trellis/` (the user config, the trust record)."""
    allowed_protected: tuple[Path, ...] = ()
    """Protected paths (or directories of them) the user allowed writes to; relative to `root`."""
    front_end: FrontEndAccess = LOCAL
    """The front end's files and terminal, where it lends them (an editor's unsaved buffers)."""

    def __post_init__(self) -> None:
        if self.max_output <= 0:
            raise ValueError(f"max_output must be positive, got {self.max_output}")
        if self.timeout <= 0 or self.max_timeout <= 0:
            raise ValueError(
                f"timeouts must be positive, got timeout={self.timeout}, "
                f"max_timeout={self.max_timeout}"
            )

    def is_secret(self, relative_path: str) -> bool:
        """A file is secret when its name matches a secret pattern
        (docs/spec/context-orchestration.md)."""
        return is_secret_path(relative_path, self.secret_patterns)

    def label_for(self, relative_paths: Iterable[str]) -> PrivatizationLabel:
        """The label of material read from these workspace files: restricted if any is secret."""
        paths = sorted(set(relative_paths))
        secret = any(self.is_secret(p) for p in paths)
        privacy_class = PrivacyClass.restricted if secret else PrivacyClass.internal
        return PrivatizationLabel.of(privacy_class, *paths)


def is_secret_path(relative_path: str, patterns: Iterable[str]) -> bool:
    """Whether the file's name matches one of the secret `patterns`."""
    name = PurePosixPath(relative_path).name
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool call produced; `label` is the privacy label of the material it revealed."""

    content: str
    is_error: bool = False
    additional_contexts: tuple[AdditionalContext, ...] = ()
    label: PrivatizationLabel | None = None
    change: FileChangeRecord | None = None
    """The file the call changed, as the log records it (`tool/result`'s `change`)."""

    @classmethod
    def error(cls, message: str) -> ToolOutput:
        """An error the model reads; it reveals nothing from the workspace, so it is internal."""
        return cls(message, is_error=True, label=PrivatizationLabel.of(PrivacyClass.internal))


def unstorable_output(output: ToolOutput, tool: str, reason: str) -> ToolOutput:
    """What stands in for a result the log cannot hold: an error the model can read, so the turn
    goes on; the contexts the call produced are kept."""
    return replace(
        output,
        content=f"The result of {tool} could not be recorded, so it is withheld: {reason}",
        is_error=True,
        label=PrivatizationLabel.of(PrivacyClass.internal),
        change=None,
    )


def bound_text(text: str, limit: int, *, hint: str = "") -> str:
    """Cut `text` to `limit` characters and say so, so the model never mistakes a cut for the end."""
    if len(text) <= limit:
        return text
    marker = f"\n[output truncated: {limit} of {len(text)} characters shown"
    return text[:limit] + marker + (f"; {hint}]" if hint else "]")


class ToolArgs(BaseModel):
    """Base of the built-in argument models: an unknown argument is most likely a misspelt one,
    so the model is told rather than silently ignored."""

    # built when a call is validated or a gateway reads the schema, not by every run importing it
    model_config = ConfigDict(extra="forbid", defer_build=True)


ArgsT = TypeVar("ArgsT", bound=BaseModel)


class Tool(ABC, Generic[ArgsT]):
    """A tool: its pydantic argument model is both the validator and the schema the model sees."""

    name: ClassVar[str]
    description: ClassVar[str]
    args_model: type[ArgsT]
    kind: ClassVar[ToolKind] = ToolKind.other
    needs_permission: ClassVar[bool] = False
    may_change_workspace: bool = False
    """A call may change files in the workspace: the session takes a checkpoint before it
    (`engine.agent.checkpointing`). An MCP server's tool may, unless it says it only reads."""

    @abstractmethod
    async def run(self, args: ArgsT, ctx: ToolContext) -> ToolOutput:
        """Do the work; expected failures are error outputs, never exceptions."""

    def spec(self) -> ToolSpec:
        """The tool as the model sees it: name, description and a title-free JSON schema (built
        when a gateway first reads it)."""
        return _spec_of(self.name, self.description, self.args_model)


@functools.cache
def _spec_of(name: str, description: str, args_model: type[BaseModel]) -> ToolSpec:
    """One spec per tool: every request lists the tools, and they never change."""
    return ToolSpec(name, description, functools.partial(_schema_of, args_model))


@functools.cache
def _schema_of(args_model: type[BaseModel]) -> dict[str, Any]:
    """Built once per argument model, when a gateway first asks for it."""
    schema: dict[str, Any] = _strip_titles(args_model.model_json_schema())
    return schema


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's generated `title`s (noise to the model) but keep properties named `title`."""
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            cleaned[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _strip_titles(value)
    return cleaned
