"""Permission modes: how the session decides the tool calls that need permission.

The mode is a session setting the engine owns (`Agent.mode`, `Agent.set_mode`, logged as
`permission/mode`); every front end shows it and offers to change it. It decides at permission
time only: the tools offered to the model are the same in every mode, so changing it never
changes the request prefix a provider caches.
"""

from __future__ import annotations

from typing import Literal, assert_never, get_args

PermissionMode = Literal["ask", "accept-edits", "read-only", "approve-all"]
"""A mode's name as the log, the command line and ACP spell it. This module imports nothing
else, so the command line can offer the modes without loading the engine."""

MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)
"""Every mode, in the order front ends list them."""

DEFAULT_MODE: PermissionMode = "ask"

MODE_NAMES: dict[PermissionMode, str] = {
    "ask": "ask",
    "accept-edits": "accept edits",
    "read-only": "read-only",
    "approve-all": "approve all",
}
"""What a person reads (the status line, a menu)."""

MODE_DESCRIPTIONS: dict[PermissionMode, str] = {
    "ask": "ask before each tool that writes, runs a command or comes from an MCP server",
    "accept-edits": "file edits run without asking; commands and MCP tools still ask",
    "read-only": "tools that write, run a command or come from an MCP server are refused",
    "approve-all": "every tool runs without asking (not kept when the session is reopened)",
}

CYCLE: tuple[PermissionMode, ...] = ("ask", "accept-edits", "read-only")
"""What the console's mode key steps through: `approve-all` is never one key press away, it is
asked for by name (`/mode approve-all`)."""

Verdict = Literal["refuse", "allow", "ask"]


def parse_mode(text: str) -> PermissionMode:
    """The mode `text` names (`read-only`, `read_only` and `read only` alike); raises
    `ValueError` naming the modes for anything else."""
    wanted = "-".join(text.strip().lower().replace("_", " ").split())
    for mode in MODES:
        if mode == wanted:
            return mode
    raise ValueError(f"no mode {text.strip()!r}; the modes are {', '.join(MODES)}")


def next_mode(mode: PermissionMode) -> PermissionMode:
    """The mode after `mode` in the console's cycle (`approve-all` goes back to `ask`)."""
    if mode not in CYCLE:
        return CYCLE[0]
    return CYCLE[(CYCLE.index(mode) + 1) % len(CYCLE)]


def verdict(mode: PermissionMode, kind: str) -> Verdict:
    """What `mode` does with a call that needs permission of a tool of `kind` (a `ToolKind`):
    refuse it, allow it without asking, or leave it to standing rules and the responder."""
    match mode:
        case "ask":
            return "ask"
        case "accept-edits":
            return "allow" if kind == "edit" else "ask"
        case "read-only":
            return "refuse"
        case "approve-all":
            return "allow"
        case _:
            assert_never(mode)
