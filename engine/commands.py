"""Slash commands: one registry that the TUI, headless runs and ACP all use.

A command gets the agent and the text after its name; a bad argument raises `CommandUsageError`, and
`CommandRegistry.run` turns that and an unknown name into a result carrying the usage message. A
command that changed the session says so (`CommandResult.changed`), and `run` logs the exchange
(`command/run`), so every replay of the log shows it where it happened.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.agent.options import DEFAULT_KEEP_GROUPS
from engine.config import ConfigError
from engine.context.area import AreaLifeState
from engine.context.areas import NoticeArea, PlanArea, SubtaskArea, WatchArea
from engine.errors import TrellisError
from engine.message import AdditionalContext, Source

if TYPE_CHECKING:
    from engine.agent.agent import Agent


class CommandUsageError(TrellisError, ValueError):
    """The arguments do not fit the command; the message is its usage."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a slash command says back, and whether it succeeded."""

    text: str
    ok: bool = True
    leave: bool = False
    """The user asked to leave (`/quit`): the console quits; a front end with nothing to leave
    (a headless run, an editor) shows the text."""
    changed: bool = False
    """The command changed the session (a pin, the plan, the mode, ...): the exchange is logged."""


Handler = Callable[["Agent", str], Awaitable[CommandResult]]


@dataclass(frozen=True, slots=True)
class Command:
    """A slash command of the registry: its name, usage line, description and handler."""

    name: str
    usage: str
    description: str
    handler: Handler
    input_hint: str = ""
    in_editors: bool = True
    """Offered to ACP clients; `/quit` is not: an editor closes its sessions itself."""

    def fail(self, why: str) -> CommandUsageError:
        return CommandUsageError(f"{why}\nusage: {self.usage}")

    @property
    def needs_argument(self) -> bool:
        """Its usage names an argument it cannot run without (`/pin TEXT`, not `/model [NAME]`)."""
        _, _, arguments = self.usage.partition(" ")
        return bool(arguments) and not arguments.startswith("[")


class CommandRegistry:
    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}

    def register(self, command: Command) -> None:
        if command.name in self._commands:
            raise ValueError(f"command /{command.name} is already registered")
        self._commands[command.name] = command

    def get(self, name: str) -> Command | None:
        return self._commands.get(name.lstrip("/"))

    @property
    def commands(self) -> tuple[Command, ...]:
        return tuple(sorted(self._commands.values(), key=lambda c: c.name))

    @staticmethod
    def is_command(line: str) -> bool:
        return line.startswith("/") and not line.startswith("//")

    async def run(self, agent: Agent, line: str) -> CommandResult:
        """Run `/name args`; unknown commands and bad arguments answer with a usage message."""
        name, _, args = line.strip().removeprefix("/").partition(" ")
        command = self._commands.get(name)
        if command is None:
            known = ", ".join(f"/{c.name}" for c in self.commands)
            return CommandResult(f"unknown command /{name}; known commands: {known}", ok=False)
        try:
            result = await command.handler(agent, args.strip())
        except CommandUsageError as exc:
            return CommandResult(str(exc), ok=False)
        if result.changed:
            agent.record_command(line.strip(), result.text)
        return result


def _needs_text(command_name: str, args: str) -> str:
    if not args:
        raise CommandUsageError(f"/{command_name} needs an argument\nusage: {USAGE[command_name]}")
    return args


async def _help(agent: Agent, args: str) -> CommandResult:
    lines = [f"{c.usage:<28} {c.description}" for c in REGISTRY.commands]
    return CommandResult("\n".join(lines))


async def _quit(agent: Agent, args: str) -> CommandResult:
    return CommandResult("nothing to leave here: /quit and /exit close the console", leave=True)


async def _inject(agent: Agent, args: str) -> CommandResult:
    text = _needs_text("inject", args)
    agent.inject(AdditionalContext(text, Source("command", "inject")))
    where = "staged for the next boundary" if agent.turn_open else "added to the conversation"
    return CommandResult(f"context {where}", changed=True)


async def _notice(agent: Agent, args: str) -> CommandResult:
    text = _needs_text("notice", args)
    area_id = agent.register_area(NoticeArea(text))
    return CommandResult(
        f"notice {area_id} registered; it is shown once at the next request", changed=True
    )


async def _subtask(agent: Agent, args: str) -> CommandResult:
    goal = _needs_text("subtask", args)
    if agent.active_subtask() is not None:
        return CommandResult("a subtask is already active; finish it first", ok=False)
    area_id = agent.register_area(SubtaskArea(goal))
    agent.send(goal)
    return CommandResult(f"subtask {area_id} started: {goal}", changed=True)


async def _watch(agent: Agent, args: str) -> CommandResult:
    path = _needs_text("watch", args)
    try:
        area = WatchArea(path, Path(agent.workspace), secret_patterns=agent.secret_patterns)
    except ValueError as exc:  # a path outside the workspace
        return CommandResult(str(exc), ok=False)
    area_id = agent.register_area(area)
    return CommandResult(f"watching {path} ({area_id})", changed=True)


async def _unwatch(agent: Agent, args: str) -> CommandResult:
    path = _needs_text("unwatch", args)
    for area in (agent.area(view.id) for view in agent.areas):
        if (
            isinstance(area, WatchArea)
            and area.path == path
            and area.life_state is AreaLifeState.retain
        ):
            area.unwatch()
            return CommandResult(f"stopped watching {path}", changed=True)
    return CommandResult(f"{path} is not being watched", ok=False)


def _open_plan(agent: Agent) -> tuple[str, PlanArea] | None:
    """The session's plan that is not closed, with its Area id."""
    for view in agent.areas:
        area = agent.area(view.id)
        if isinstance(area, PlanArea) and area.life_state is AreaLifeState.retain:
            return view.id, area
    return None


def _plan_changed(agent: Agent, plan_id: str, plan: PlanArea) -> None:
    """Record the change now (a resume restores the plan as it is), and tell the model when the
    plan cannot render: an Area holding the cursor exclusively (a subtask) keeps every other
    Area from rendering until it yields. The note is appended while that Area holds the cursor,
    so it is its chatter, reclaimed with it; the plan then renders itself."""
    agent.area_changed(plan_id)
    holder = agent.cursor_holder
    if holder is None or holder == plan_id:
        return
    text = (
        f"The user changed the plan:\n{plan.text()}"
        if plan.life_state is AreaLifeState.retain
        else "The user closed the plan."
    )
    agent.inject(AdditionalContext(text, Source("command", "plan")))


async def _plan(agent: Agent, args: str) -> CommandResult:
    found = _open_plan(agent)
    words = args.split(maxsplit=1)
    verb = words[0] if words else "show"
    rest = words[1] if len(words) > 1 else ""
    if verb == "add":
        if not rest:
            raise REGISTRY_COMMANDS["plan"].fail("/plan add needs the item's text")
        if found is None:
            plan = PlanArea()
            found = agent.register_area(plan), plan
        plan_id, plan = found
        plan.add(rest)
        _plan_changed(agent, plan_id, plan)
        return CommandResult(plan.text(), changed=True)
    if found is None:
        return CommandResult("there is no plan; start one with /plan add TEXT", ok=False)
    plan_id, plan = found
    if verb == "show":
        return CommandResult(plan.text())
    if verb in ("check", "uncheck", "remove"):
        # The number is the item's id, as `plan.text()` shows it (ids survive removals).
        try:
            getattr(plan, verb)(int(rest))
        except (ValueError, KeyError):
            numbers = ", ".join(str(item.id) for item in plan.items) or "none"
            raise REGISTRY_COMMANDS["plan"].fail(
                f"/plan {verb} needs an item number (items: {numbers})"
            ) from None
        _plan_changed(agent, plan_id, plan)
        return CommandResult(plan.text(), changed=True)
    if verb == "close":
        plan.close()
        _plan_changed(agent, plan_id, plan)
        return CommandResult("plan closed; it is reclaimed at the next request", changed=True)
    raise REGISTRY_COMMANDS["plan"].fail(f"unknown /plan action {verb!r}")


async def _pin(agent: Agent, args: str) -> CommandResult:
    text = _needs_text("pin", args)
    pin_id = agent.pin(text)
    return CommandResult(
        f"pinned {pin_id}; the model sees it now, and it joins the stable floor at the next "
        "planned break",
        changed=True,
    )


async def _unpin(agent: Agent, args: str) -> CommandResult:
    pin_id = _needs_text("unpin", args)
    if not agent.unpin(pin_id):
        return CommandResult(
            f"no pin {pin_id!r}; pins: {', '.join(p.id for p in agent.pins) or 'none'}", ok=False
        )
    return CommandResult(
        f"unpinned {pin_id}; the model is told now, and it leaves the stable floor at the next "
        "planned break",
        changed=True,
    )


async def _model(agent: Agent, args: str) -> CommandResult:
    if not args:
        from engine.model_catalog import choices_table

        model = agent.model
        lines = [f"model: {model.name} ({model.model_id})"]
        if model.next_name != model.name:
            lines[0] += f"; from the next turn: {model.next_name}"
        lines += choices_table(agent.model_choices(), marked=model.name)
        lines.append("* this session's model; /model NAME switches (from the next turn)")
        return CommandResult("\n".join(lines))
    words = shlex.split(args)
    if len(words) != 1:
        raise REGISTRY_COMMANDS["model"].fail("/model takes one model name")
    try:
        change = agent.request_model(words[0])
    except ConfigError as exc:
        return CommandResult(str(exc), ok=False)
    return CommandResult(
        f"model {change.model} from the next turn (grant epoch {change.grant_epoch})",
        changed=True,
    )


async def _mode(agent: Agent, args: str) -> CommandResult:
    from engine.permission_mode import MODE_DESCRIPTIONS, MODE_NAMES, MODES, parse_mode

    if not args:
        lines = [f"mode: {MODE_NAMES[agent.mode]}"]
        lines += [
            f"{'*' if mode == agent.mode else ' '} {mode:<13} {MODE_DESCRIPTIONS[mode]}"
            for mode in MODES
        ]
        lines.append("/mode NAME switches (at once)")
        return CommandResult("\n".join(lines))
    try:
        mode = parse_mode(args)
    except ValueError as exc:
        raise REGISTRY_COMMANDS["mode"].fail(str(exc)) from None
    if not await agent.set_mode(mode):
        return CommandResult(f"the mode is {MODE_NAMES[mode]} already")
    return CommandResult(f"mode {MODE_NAMES[mode]}: {MODE_DESCRIPTIONS[mode]}", changed=True)


async def _context(agent: Agent, args: str) -> CommandResult:
    if args:
        raise REGISTRY_COMMANDS["context"].fail("/context takes no arguments")
    from engine.agent.window_breakdown import window_breakdown
    from engine.context_report import context_report

    last = await agent.last_request()
    assembly = agent.last_assembly
    breakdown = None
    if last is not None and assembly is not None:
        breakdown = window_breakdown(assembly, usage=last[1])
    return CommandResult(context_report(agent.model.name, agent.budget, last, breakdown))


async def _compact(agent: Agent, args: str) -> CommandResult:
    from engine.agent.compactor import CompactionError

    keep = DEFAULT_KEEP_GROUPS
    if args:
        try:
            keep = int(args)
            if keep < 0:
                raise ValueError
        except ValueError:
            raise REGISTRY_COMMANDS["compact"].fail(
                "/compact takes the number of newest turns to keep"
            ) from None
    try:
        result = await agent.compact(keep)
    except CompactionError as exc:
        return CommandResult(str(exc), ok=False)
    if result is None:
        return CommandResult("nothing to compact")
    return CommandResult(
        f"compacted {result.groups} turn(s) ({result.reclaimed} messages) into a summary",
        changed=True,
    )


async def _fork(agent: Agent, args: str) -> CommandResult:
    if args:
        raise REGISTRY_COMMANDS["fork"].fail("/fork takes no arguments")
    try:
        new_id = await agent.fork()
    except TrellisError as exc:  # a running turn, a session that is not stored, the store
        return CommandResult(str(exc), ok=False)
    return CommandResult(f"forked into session {new_id}")


REWIND_WORDS = ("conversation", "code", "overwrite")


async def _rewind(agent: Agent, args: str) -> CommandResult:
    """`/rewind` lists the prompts; `/rewind N [conversation|code] [overwrite]` rewinds to before
    turn N (both by default); `/rewind undo` takes the last rewind back. Files changed by someone
    else since the agent left them are kept unless `overwrite`, and named."""
    from engine.agent.rewind import RewindError
    from engine.rewind_report import points_text, result_text

    command = REGISTRY_COMMANDS["rewind"]
    words = args.split()
    try:
        turns = await agent.rewind_points()
    except RewindError as exc:
        return CommandResult(str(exc), ok=False)
    if not words:
        return CommandResult(points_text(turns, command.usage))
    target, *rest = words
    unknown = [w for w in rest if w not in REWIND_WORDS]
    if unknown or len(set(rest)) != len(rest) or {"conversation", "code"} <= set(rest):
        raise command.fail(
            f"after the turn: at most one of conversation, code, and overwrite (not {' '.join(rest)})"
        )
    to_turn: int | None = None
    if target != "undo":
        valid = ", ".join(str(t.turn) for t in turns) or "none yet"
        try:
            to_turn = int(target)
        except ValueError:
            raise command.fail(f"{target!r} is not a turn; the turns are {valid}") from None
        if to_turn not in {t.turn for t in turns}:
            raise command.fail(f"no turn {to_turn} in the history; the turns are {valid}")
    code = "conversation" not in rest
    try:
        result = await agent.rewind(
            to_turn,
            conversation="code" not in rest,
            code=code,
            overwrite="overwrite" in rest,
        )
    except RewindError as exc:
        return CommandResult(str(exc), ok=False)
    return CommandResult(result_text(result, code_asked=code), changed=True)


USAGE = {
    "help": "/help",
    "inject": "/inject TEXT",
    "notice": "/notice TEXT",
    "subtask": "/subtask GOAL",
    "watch": "/watch PATH",
    "unwatch": "/unwatch PATH",
    "plan": "/plan [show|add TEXT|check N|uncheck N|remove N|close]",
    "pin": "/pin TEXT",
    "unpin": "/unpin ID",
    "model": "/model [NAME]",
    "mode": "/mode [ask|accept-edits|read-only|approve-all]",
    "fork": "/fork",
    "compact": "/compact [KEEP]",
    "context": "/context",
    "rewind": "/rewind [N [conversation|code] [overwrite] | undo]",
    "quit": "/quit",
    "exit": "/exit",
}

REGISTRY = CommandRegistry()
for _command in (
    Command("help", USAGE["help"], "list the commands", _help),
    Command(
        "inject",
        USAGE["inject"],
        "add context (not your own words) to the conversation",
        _inject,
        "text",
    ),
    Command(
        "notice",
        USAGE["notice"],
        "show a one-shot notice to the model at the next request",
        _notice,
        "text",
    ),
    Command(
        "subtask",
        USAGE["subtask"],
        "work a sub-goal; its chatter is reclaimed when done",
        _subtask,
        "goal",
    ),
    Command(
        "watch",
        USAGE["watch"],
        "keep a workspace file in the context, re-read when it changes",
        _watch,
        "path",
    ),
    Command("unwatch", USAGE["unwatch"], "stop watching a file", _unwatch, "path"),
    Command("plan", USAGE["plan"], "a checklist the model sees", _plan, "action"),
    Command("pin", USAGE["pin"], "pin a note into the stable floor", _pin, "text"),
    Command("unpin", USAGE["unpin"], "remove a pinned note", _unpin, "pin id"),
    Command(
        "model", USAGE["model"], "show or switch the model (from the next turn)", _model, "name"
    ),
    Command(
        "mode",
        USAGE["mode"],
        "show or switch the permission mode (at once)",
        _mode,
        "mode",
    ),
    Command("fork", USAGE["fork"], "copy this session up to here into a new one", _fork),
    Command(
        "compact",
        USAGE["compact"],
        "summarize older turns to free the context",
        _compact,
        "turns to keep",
    ),
    Command(
        "context",
        USAGE["context"],
        "context size, the model's window and the cap",
        _context,
    ),
    Command(
        "rewind",
        USAGE["rewind"],
        "list the prompts, or go back to before one: files and conversation",
        _rewind,
        "turn",
    ),
    Command("quit", USAGE["quit"], "leave the console (Ctrl+Q)", _quit, in_editors=False),
    Command("exit", USAGE["exit"], "leave the console, as /quit does", _quit, in_editors=False),
):
    REGISTRY.register(_command)
REGISTRY_COMMANDS = {c.name: c for c in REGISTRY.commands}
