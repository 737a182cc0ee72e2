"""The permission broker: decides whether a tool call that needs permission may run.

The session's permission mode decides first (engine/permission_mode.py: `read-only` refuses,
`approve-all` and, for file edits, `accept-edits` allow), except that a standing "deny" rule is
never overridden; then standing rules (from "always" answers, restored from `permission/rule`
events on resume); everything else is asked of a pluggable responder — the TUI dialog, ACP
`session/request_permission`, or the headless `--allow` flags. A cancelled turn never waits for
an answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, assert_never

from engine.events import Decision as DecisionValue
from engine.events import (
    Event,
    Payload,
    PermissionModeSet,
    PermissionRule,
    RuleDecision,
)
from engine.permission_mode import DEFAULT_MODE, MODE_NAMES, PermissionMode, verdict
from engine.tools.tool import ToolKind


class PermissionAnswer(StrEnum):
    """What a person (or a policy standing in for one) answered."""

    allow_once = "allow_once"
    allow_always = "allow_always"
    deny_once = "deny_once"
    deny_always = "deny_always"


@dataclass(frozen=True, slots=True)
class PermissionQuestion:
    """One call awaiting permission, with what a front end needs to show it."""

    call_id: str
    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    kind: ToolKind = ToolKind.other


@dataclass(frozen=True, slots=True)
class PermissionReply:
    """An answer with a message for the model (e.g. which flag would have allowed the call)."""

    answer: PermissionAnswer
    message: str = ""


PermissionResponder = Callable[[PermissionQuestion], Awaitable[PermissionAnswer | PermissionReply]]
"""Asks whoever answers permission requests; cancelling it withdraws the question."""


@dataclass(frozen=True, slots=True)
class Decision:
    """The broker's verdict; `rule` is set when the answer was "always" and must be recorded
    by the caller as a `permission/rule` event (see `rule_event`)."""

    decision: DecisionValue
    message: str = ""
    rule: RuleDecision | None = None
    tool: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    def rule_event(self) -> PermissionRule | None:
        """The `permission/rule` payload to append, if this decision made a standing rule."""
        return None if self.rule is None else PermissionRule(tool=self.tool, decision=self.rule)


class PermissionBroker:
    """The mode and standing rules first, then the responder; pending questions can all be
    withdrawn at once."""

    def __init__(
        self,
        responder: PermissionResponder,
        rules: Mapping[str, RuleDecision] | None = None,
        mode: PermissionMode = DEFAULT_MODE,
    ) -> None:
        self._responder = responder
        self._rules: dict[str, RuleDecision] = dict(rules or {})
        self._pending: set[asyncio.Task[PermissionAnswer | PermissionReply]] = set()
        self.mode: PermissionMode = mode
        """The session's permission mode; the Agent sets it with the `permission/mode` it logs."""

    @property
    def rules(self) -> Mapping[str, RuleDecision]:
        return dict(self._rules)

    @property
    def pending(self) -> int:
        """How many requests are waiting for the responder."""
        return len(self._pending)

    def load_rules(self, events: Iterable[Event | Payload]) -> None:
        """Restore standing rules from a session's events (later rules for a tool win)."""
        for item in events:
            self.follow(item.data if isinstance(item, Event) else item)

    def follow(self, payload: Payload) -> None:
        """Follow a session's log one event at a time (resume streams it): a rule stands, a
        mode holds until the next."""
        if (follow := _FOLLOW.get(type(payload))) is not None:
            follow(self, payload)

    def _follow_rule(self, payload: PermissionRule) -> None:
        self._rules[payload.tool] = payload.decision

    def _follow_mode(self, payload: PermissionModeSet) -> None:
        self.mode = payload.mode

    def follow_rewound(self, payload: Payload) -> None:
        """An event a rewind took out of the history: a standing rule still stands (the user's
        answer about a tool, not the conversation's state); a mode does not."""
        if type(payload) is PermissionRule:  # by exact class (see `Payload`)
            self._rules[payload.tool] = payload.decision

    def fresh(self) -> PermissionBroker:
        """A broker asking the same responder, with no rule and the default mode."""
        return PermissionBroker(self._responder)

    async def decide(
        self, request: PermissionQuestion, on_ask: Callable[[], None] | None = None
    ) -> Decision:
        """Allow, deny, or "cancelled" when the question was withdrawn before an answer.

        The mode or a standing rule answers at once. `on_ask` is called when the responder is really asked
        (so a front end shows the question only then). Otherwise the responder is asked in its own task: if that
        task is cancelled (`cancel_pending()`, or by whoever owns it) the result is "cancelled".
        If the task awaiting `decide` is itself cancelled, the question is withdrawn and the
        `CancelledError` propagates, as asyncio expects. A responder that fails denies the call.
        """
        standing = self._rules.get(request.tool)
        by_mode = verdict(self.mode, request.kind)
        mode_name = MODE_NAMES[self.mode]
        if by_mode == "refuse":
            return Decision(
                "deny",
                f"{request.tool} was refused: the session is in {mode_name} mode, where no tool "
                "that writes, runs a command or comes from an MCP server may run; the user can "
                "change the mode",
                tool=request.tool,
            )
        if by_mode == "allow" and standing != "deny":
            return Decision(
                "allow", f"{request.tool} is allowed by {mode_name} mode", tool=request.tool
            )
        if standing == "allow":
            return Decision(
                "allow", f"{request.tool} is allowed by a standing rule", tool=request.tool
            )
        if standing == "deny":
            return Decision(
                "deny", f"{request.tool} is denied by a standing rule", tool=request.tool
            )
        cancels_before = _cancel_requests()
        if on_ask is not None:
            on_ask()
        asking = asyncio.create_task(self._ask(request), name=f"permission {request.call_id}")
        self._pending.add(asking)
        try:
            reply = await asyncio.shield(asking)
        except asyncio.CancelledError:
            if asking.cancelled() and _cancel_requests() == cancels_before:
                return Decision(
                    "cancelled", "the permission request was cancelled", tool=request.tool
                )
            asking.cancel()
            raise
        except Exception as error:
            return Decision(
                "deny",
                f"{request.tool} was denied: the permission prompt failed "
                f"({type(error).__name__}: {error})",
                tool=request.tool,
            )
        finally:
            self._pending.discard(asking)
        return self._apply(request, reply)

    def cancel_pending(self) -> None:
        """Withdraw every waiting question; each waiting `decide` returns "cancelled"."""
        for asking in list(self._pending):
            asking.cancel()

    async def _ask(self, request: PermissionQuestion) -> PermissionAnswer | PermissionReply:
        return await self._responder(request)

    def _apply(
        self, request: PermissionQuestion, reply: PermissionAnswer | PermissionReply
    ) -> Decision:
        """Turn an answer into a decision, remembering "always" answers as standing rules."""
        answer, message = (
            (reply.answer, reply.message) if isinstance(reply, PermissionReply) else (reply, "")
        )
        tool = request.tool
        match answer:
            case PermissionAnswer.allow_once:
                return Decision("allow", message or f"{tool} was allowed once", tool=tool)
            case PermissionAnswer.allow_always:
                self._rules[tool] = "allow"
                return Decision(
                    "allow", message or f"{tool} is allowed from now on", rule="allow", tool=tool
                )
            case PermissionAnswer.deny_once:
                return Decision("deny", message or f"the user denied {tool}", tool=tool)
            case PermissionAnswer.deny_always:
                self._rules[tool] = "deny"
                return Decision(
                    "deny", message or f"the user denied {tool} from now on", rule="deny", tool=tool
                )
            case _:
                assert_never(answer)


_FOLLOW: dict[type[Payload], Callable[[PermissionBroker, Any], None]] = {
    PermissionRule: PermissionBroker._follow_rule,
    PermissionModeSet: PermissionBroker._follow_mode,
}
"""What each kind of event does to the broker, found by the payload's exact class (see `Payload`:
a table, as a resume follows every event of the log); the others change nothing."""


def _cancel_requests() -> int:
    """How often the running task was asked to cancel; a rise tells our own cancellation apart
    from the responder's."""
    task = asyncio.current_task()
    return 0 if task is None else task.cancelling()


@dataclass(frozen=True, slots=True)
class HeadlessPolicy:
    """The headless responder: what a run with no one to ask answers when the mode asks.
    `--allow TOOL` (repeatable) allows that tool; any other call is denied with a message naming
    the flags that would allow it, so the person reading a headless run knows how to rerun it.
    (`--approve-all` and `--deny-all` are modes: `approve-all` and `read-only`.)
    """

    allow: frozenset[str] = frozenset()

    async def __call__(self, request: PermissionQuestion) -> PermissionReply:
        tool = request.tool
        if tool in self.allow:
            return PermissionReply(PermissionAnswer.allow_once, f"{tool} allowed by --allow {tool}")
        edits = " or --mode accept-edits" if request.kind is ToolKind.edit else ""
        return PermissionReply(
            PermissionAnswer.deny_once,
            f"{tool} needs permission; rerun with --allow {tool}{edits}, or --approve-all",
        )
