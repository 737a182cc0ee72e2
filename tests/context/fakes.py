"""Recording fakes: Areas that log every callback, in order, into one shared log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.context import AreaFlowState, AreaLifeState, Context, CoopContext, NativeContent
from engine.context.provenance import ItemKind, Provenance
from engine.gateway.base import GatewayType
from engine.message import USER, Message, Role

Log = list[tuple[str, str]]


class FakeArea:
    """Renders what it is told to; records observe/render/promote/gc_prologue as (name, call)."""

    def __init__(
        self,
        log: Log,
        name: str,
        *,
        flow: AreaFlowState = AreaFlowState.yielded,
        renders: Sequence[Sequence[str]] = (),
        every: Sequence[str] = (),
        promotes: Sequence[str] = (),
    ) -> None:
        self.log = log
        self.name = name
        self.life = AreaLifeState.retain
        self.flow = flow
        self.pending: list[list[str]] = [list(r) for r in renders]
        self.every = list(every)
        self.promotes = list(promotes)
        self.observed: list[tuple[NativeContent, ...]] = []
        self.retire_in_observe = False
        self.retire_after_render = False
        self.fail_in: str | None = None
        self.in_gc: list[str] = []  # callbacks that mutate state during GC

    @property
    def life_state(self) -> AreaLifeState:
        return self.life

    @property
    def flow_state(self) -> AreaFlowState:
        return self.flow

    def retire(self) -> None:
        self.life = AreaLifeState.retired

    def observe(self, context: Sequence[NativeContent]) -> None:
        self.log.append((self.name, "observe"))
        self.observed.append(tuple(context))
        if self.fail_in == "observe":
            raise RuntimeError("observe failed")
        if self.retire_in_observe:
            self.retire()

    def render(self) -> list[Message]:
        self.log.append((self.name, "render"))
        if self.fail_in == "render":
            raise RuntimeError("render failed")
        texts = self.pending.pop(0) if self.pending else list(self.every)
        if self.retire_after_render:
            self.retire()
        return [Message(Role.user, f"{self.name}:{t}") for t in texts]

    def promote(self) -> tuple[Message, ...]:
        self.log.append((self.name, "promote"))
        if self.fail_in == "promote":
            raise RuntimeError("promote failed")
        if "promote" in self.in_gc:
            self.life, self.flow = AreaLifeState.retain, AreaFlowState.exclusive
        return tuple(Message(Role.user, f"{self.name}:{t}") for t in self.promotes)

    def gc_prologue(self) -> None:
        self.log.append((self.name, "gc_prologue"))
        if self.fail_in == "gc_prologue":
            raise RuntimeError("gc_prologue failed")
        if "gc_prologue" in self.in_gc:
            self.life = AreaLifeState.retain


@dataclass
class Harness:
    """A Context, a CoopContext over it, a shared log and a loop that appends conversation."""

    gateway_type: GatewayType = GatewayType.scripted
    log: Log = field(default_factory=list)

    def __post_init__(self) -> None:
        self.context = Context(self.gateway_type)
        self.coop = CoopContext(self.context)

    def area(self, name: str, **kwargs: Any) -> FakeArea:
        area = FakeArea(self.log, name, **kwargs)
        self.coop.register(area)
        return area

    def say(self, text: str) -> int:
        """The loop appends a conversation item (stamped by the CoopContext)."""
        return self.context.emplace_message(
            Message(Role.user, text, USER), Provenance(kind=ItemKind.message, source=USER)
        )

    def render(self) -> list[str]:
        self.coop.render()
        return self.texts()

    def texts(self) -> list[str]:
        return [m.content for m in self.context.messages()]

    def garbage(self) -> list[str]:
        return [self.context.codec.decode(item).content for item in self.coop.garbage]

    def calls(self) -> list[tuple[str, str]]:
        calls = list(self.log)
        self.log.clear()
        return calls


class LoggedLoop:
    """A minimal agent loop: every append goes through a Session log first, as the real loop does."""

    def __init__(self, gateway_type: GatewayType = GatewayType.scripted) -> None:
        from engine.session import Session

        self.session = Session("test")
        self.context = Context(gateway_type)
        self.coop = CoopContext(self.context, self.session.append)
        self.turn: int | None = None
        self.step = 0

    def open_turn(self) -> None:
        from engine.events import StepStart, TurnStart

        self.session.append(TurnStart(turn=self.session.state.last_turn + 1))
        self.turn = self.session.state.open_turn
        self.step = 1
        self.session.append(StepStart(turn=self.turn, step=1))

    def close_turn(self) -> None:
        from engine.events import StepEnd, TurnEnd

        assert self.turn is not None
        self.session.append(StepEnd(turn=self.turn, step=self.step))
        self.session.append(TurnEnd(turn=self.turn, reason="completed"))
        self.turn = None

    def user(self, text: str, source: Any = USER) -> None:
        from engine.context import message_provenance
        from engine.events import UserMessage

        event = self.session.append(UserMessage(content=text, source=source))
        message = Message(Role.user, text, source)
        self.context.emplace_message(message, message_provenance(event, self.turn))

    def assistant(self, content: str, calls: Sequence[Any] = ()) -> None:
        from engine.context import message_provenance
        from engine.events import AssistantMessage, ToolCallRecord

        assert self.turn is not None
        payload = AssistantMessage(
            turn=self.turn,
            step=self.step,
            content=content,
            tool_calls=tuple(calls),
            provider_state={"signature": "sig"},
            reasoning="thinking",
        )
        event = self.session.append(payload)
        self.context.emplace_assistant(
            content,
            calls,
            message_provenance(event, self.turn),
            reasoning="thinking",
            provider_state={"signature": "sig"},
        )
        for call in calls:
            self.session.append(
                ToolCallRecord(turn=self.turn, step=self.step, call_id=call.id, name=call.name)
            )

    def tool_result(self, call: Any, content: str) -> None:
        from engine.context import message_provenance
        from engine.events import ToolResultRecord
        from engine.message import ToolResult

        assert self.turn is not None
        event = self.session.append(
            ToolResultRecord(turn=self.turn, step=self.step, call_id=call.id, content=content)
        )
        self.context.emplace_tool_result(
            ToolResult(call.id, content), call.name, message_provenance(event, self.turn, call.name)
        )

    def render(self) -> None:
        assert self.turn is not None, "the loop only renders inside a turn"
        self.coop.render(turn=self.turn)
