"""The permission mode as ACP carries it: session modes and a config option of category `mode`.

One setting, two ways a client may know it (ACP's session modes, which Toad and Zed show, and the
newer config options): `modes` in the new/load/resume answers, `session/set_mode`,
`current_mode_update` (from the log's `permission/mode`, `replay.acp`), and a select option `mode`
beside the model's, which `session/set_config_option` sets too. Handlers call these functions;
nothing here holds state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp.exceptions import RequestError
from acp.schema import (
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from app.acp import rpc
from engine.permission_mode import (
    DEFAULT_MODE,
    MODE_DESCRIPTIONS,
    MODE_NAMES,
    MODES,
    PermissionMode,
)

if TYPE_CHECKING:
    from engine.agent import Agent

MODE_OPTION = "mode"
"""The config option's id (and its category)."""


def mode_state(mode: PermissionMode) -> SessionModeState:
    """Every mode, with `mode` current: the `modes` of a new/load/resume answer."""
    return SessionModeState(
        current_mode_id=mode,
        available_modes=[
            SessionMode(id=each, name=MODE_NAMES[each], description=MODE_DESCRIPTIONS[each])
            for each in MODES
        ],
    )


def mode_option(mode: PermissionMode) -> SessionConfigOptionSelect:
    """The same setting as a config option of category `mode`."""
    return SessionConfigOptionSelect(
        id=MODE_OPTION,
        name="Mode",
        description="How tool calls that need permission are decided",
        category="mode",
        type="select",
        current_value=mode,
        options=[
            SessionConfigSelectOption(
                value=each, name=MODE_NAMES[each], description=MODE_DESCRIPTIONS[each]
            )
            for each in MODES
        ],
    )


def opening_mode(logged: PermissionMode) -> PermissionMode:
    """The mode a stored session opens in when its log last set `logged`: never `approve-all`
    (the Agent falls back to `ask` when it opens it, and says so)."""
    return DEFAULT_MODE if logged == "approve-all" else logged


def current_mode(agent: Agent | None, logged: PermissionMode = DEFAULT_MODE) -> PermissionMode:
    """The session's mode: its Agent's once open, else the one it opens in (`logged`: the last
    mode its log set, as far as this connection read it)."""
    return agent.mode if agent is not None else opening_mode(logged)


def mode_named(value: object, field: str) -> PermissionMode:
    """The mode a client named in `field`; -32602 naming the field and the modes otherwise."""
    for mode in MODES:
        if value == mode:
            return mode
    raise RequestError(
        rpc.INVALID_PARAMS,
        f"Invalid params: {field}: no mode {value!r} (the modes are {', '.join(MODES)})",
        {"details": f"{field} must be one of {', '.join(MODES)}"},
    )


async def set_mode(agent: Agent, value: object, field: str) -> None:
    """The mode a client set (`session/set_mode`'s `modeId`, or the `mode` option's `value`):
    the Agent's from now on; the feed sends `current_mode_update` from the `permission/mode` it
    logs. -32602 naming `field` for a value that is no mode."""
    await agent.set_mode(mode_named(value, field))
