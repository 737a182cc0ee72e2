"""Tools the model may call: the Tool concept, the registry, confinement, permission, built-ins."""

from engine.tools.builtins import (
    EditFile,
    ListFiles,
    ReadFile,
    RunShell,
    Search,
    WriteFile,
    builtin_tools,
)
from engine.tools.permission import (
    Decision,
    HeadlessPolicy,
    PermissionAnswer,
    PermissionBroker,
    PermissionQuestion,
    PermissionReply,
    PermissionResponder,
)
from engine.tools.registry import ToolRegistry, default_registry
from engine.tools.tool import (
    DEFAULT_SECRET_PATTERNS,
    Tool,
    ToolArgs,
    ToolContext,
    ToolKind,
    ToolOutput,
    bound_text,
    unstorable_output,
)
from engine.tools.workspace import WorkspaceEscapeError, resolve_in_workspace

__all__ = [
    "DEFAULT_SECRET_PATTERNS",
    "Decision",
    "EditFile",
    "HeadlessPolicy",
    "ListFiles",
    "PermissionAnswer",
    "PermissionBroker",
    "PermissionQuestion",
    "PermissionReply",
    "PermissionResponder",
    "ReadFile",
    "RunShell",
    "Search",
    "Tool",
    "ToolArgs",
    "ToolContext",
    "ToolKind",
    "ToolOutput",
    "ToolRegistry",
    "WorkspaceEscapeError",
    "WriteFile",
    "bound_text",
    "builtin_tools",
    "default_registry",
    "resolve_in_workspace",
    "unstorable_output",
]
