"""The requests that drive an open session's Agent: `session/prompt` (a turn, or a slash
command), `session/cancel`, `session/set_mode`, `session/set_config_option` and `_trellis/inject`;
and how a turn's end becomes the prompt's answer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.exceptions import RequestError
from acp.schema import (
    CancelNotification,
    PromptRequest,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SetSessionConfigOptionResponse,
    SetSessionConfigOptionSelectRequest,
    SetSessionModeRequest,
    SetSessionModeResponse,
)

from app.acp import modes, rpc
from app.acp.opened_sessions import Opened, OpenedSessions
from app.acp.prompt import STOP_REASONS, USAGE_META, prompt_of, read_linked_files, turn_usage
from app.acp.protocol import Notification
from engine.agent import Agent
from engine.commands import REGISTRY
from engine.events import Event, TurnEnd
from engine.message import AdditionalContext, Source
from replay.acp import kept_lines

if TYPE_CHECKING:
    from app.acp.connection import AcpConnection


class PromptHandlers:
    """The prompt path of one connection, on the sessions it opened."""

    def __init__(self, connection: AcpConnection, opened: OpenedSessions) -> None:
        self._connection = connection
        self._protocol = connection.protocol
        self._opened = opened

    def notified(self, notification: Notification) -> None:
        """`session/cancel`: end this connection's prompts to the session that came before now
        (the protocol has marked them, so one not at the Agent yet does not run)."""
        assert isinstance(notification.params, CancelNotification)
        self.cancel_prompt(notification.params.session_id)

    def cancel_prompt(self, session_id: str) -> None:
        """The turn this connection's prompt runs in the session ends `cancelled`."""
        opened = self._opened.get(session_id)
        if opened is not None and self._protocol.prompts(session_id):
            self._opened.cancel_agent(opened)

    def cancel_prompts(self) -> None:
        """The connection is closing: the turns of its prompts end `cancelled`."""
        for opened in self._opened:
            self._opened.cancel_agent(opened)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        """A turn of the session's Agent with the prompt's words and files (or the slash
        command it names); answered once the feed has sent the turn."""
        opened = self._opened.require(request.session_id)
        session = opened.session
        if session.read_only:
            raise RequestError(rpc.SESSION_READ_ONLY, session.read_only)
        if session.prompting is not None or (session.agent is not None and session.agent.turn_open):
            raise RequestError(
                rpc.SESSION_BUSY,
                f"session {session.id} is already running a prompt; wait for its answer or "
                "send session/cancel",
            )
        prompt = prompt_of(request.prompt)
        session.prompting = self._connection
        try:
            if prompt.attachments:  # the files its links name, read while the session is held
                workspace = Path(session.workspace)
                prompt = await asyncio.to_thread(read_linked_files, prompt, workspace)
            agent = await self._opened.agent(opened)
            if self._protocol.prompt_cancelled(
                session.id
            ):  # cancelled before it reached the Agent: nothing ran
                return PromptResponse(stop_reason="cancelled")
            start = len(agent.log)
            if not prompt.attachments and REGISTRY.is_command(prompt.text):
                return await self._command(opened, prompt.text, start)
            handle = agent.send(prompt.text, prompt.attachments)
            try:
                outcome = await handle
            except asyncio.CancelledError:  # the connection dropped: the turn ends, stored
                agent.cancel()
                await handle
                raise
            await self._opened.caught_up(opened)
        finally:
            if session.prompting is self._connection:
                session.prompting = None
        from engine.agent.send import Blocked, Dropped

        if isinstance(outcome, Blocked):
            await self._opened.say(session.id, f"The prompt was blocked: {outcome.reason}")
            return PromptResponse(stop_reason="refusal")
        if isinstance(outcome, Dropped):
            raise RequestError(
                rpc.TURN_FAILED,
                f"the prompt did not run: {outcome.reason}",
                {"details": outcome.reason},
            )
        response = _stop(outcome.reason, outcome.message)
        return with_usage(response, await agent.read_log(start))

    async def _command(self, opened: Opened, line: str, start: int) -> PromptResponse:
        """A slash command from the engine's registry; its text goes to the client as a message
        (one that changed the session is logged, and the feed sends its answer from the log).
        A command that runs a turn (`/subtask`) answers with that turn's stop reason."""
        agent = opened.session.agent
        assert agent is not None
        options = config_options(agent)
        result = await REGISTRY.run(agent, line)
        await agent.when_idle()
        await self._opened.caught_up(opened)
        if not result.changed:
            await self._opened.say(opened.session.id, kept_lines(result.text))
        changed = config_options(agent)
        if changed != options:  # `/model NAME`, `/mode NAME`, `/rewind`: to every client
            session_id, options_now = opened.session.id, changed or []
            for other in self._connection.server.holding(opened.session):
                if other is not self._connection:
                    other.handlers.tell_options(session_id, options_now)
            await self._connection.handlers.options_changed(session_id, options_now)
        ends = [e.data for e in await agent.read_log(start) if isinstance(e.data, TurnEnd)]
        return (
            _stop(ends[-1].reason, ends[-1].message)
            if ends
            else PromptResponse(stop_reason="end_turn")
        )

    async def set_config_option(
        self, request: SetSessionConfigOptionSelectRequest
    ) -> SetSessionConfigOptionResponse:
        """The model the next step uses, or the mode (`app.acp.modes`); -32602 naming the field
        for an unknown option or value."""
        agent = await self._opened.agent(self._opened.require(request.session_id))
        if request.config_id == modes.MODE_OPTION:
            await modes.set_mode(agent, request.value, "value")
            return SetSessionConfigOptionResponse(config_options=config_options(agent))
        if request.config_id != "model":
            raise RequestError(
                rpc.INVALID_PARAMS,
                f"Invalid params: configId: unknown option {request.config_id!r} (model, mode)",
            )
        if request.value not in agent.model_names():
            known = ", ".join(agent.model_names())
            raise RequestError(
                rpc.INVALID_PARAMS,
                f"Invalid params: value: no model {request.value!r} (configured: {known})",
            )
        agent.request_model(request.value)
        return SetSessionConfigOptionResponse(config_options=config_options(agent))

    async def set_mode(self, request: SetSessionModeRequest) -> SetSessionModeResponse:
        """The session's permission mode from now on (`app.acp.modes`)."""
        agent = await self._opened.agent(self._opened.require(request.session_id))
        await modes.set_mode(agent, request.mode_id, "modeId")
        return SetSessionModeResponse()

    async def inject(self, params: Any) -> dict[str, Any]:
        """`_trellis/inject {sessionId, content, source?}`: context, never the user's words."""
        session_id, content = params.get("sessionId"), params.get("content")
        source = params.get("source", "client")
        for name, value in (("sessionId", session_id), ("content", content), ("source", source)):
            if not isinstance(value, str) or not value:
                raise RequestError(
                    rpc.INVALID_PARAMS, f"Invalid params: {name}: a non-empty string is required"
                )
        agent = await self._opened.agent(self._opened.require(session_id))
        kind, _, name = source.partition(":")
        try:
            agent.inject(AdditionalContext(content, source=Source(kind, name)))
        except ValueError as error:
            raise RequestError(rpc.INVALID_PARAMS, f"Invalid params: source: {error}") from None
        return {}


def with_usage(response: PromptResponse, turn: Sequence[Event]) -> PromptResponse:
    """The answer with the turn's reported tokens under `_meta["usage"]` (`turn_usage`)."""
    usage = turn_usage(turn)
    if usage is None:
        return response
    return response.model_copy(update={"field_meta": {USAGE_META: usage}})


def _stop(reason: Any, message: str) -> PromptResponse:
    """The prompt's answer for a turn that ended with `reason`; -32012 with the turn's message
    for one that failed (`error`, `budget`)."""
    stop = STOP_REASONS.get(reason)
    if stop is None:  # error, budget: the message says what went wrong
        summary = f"the turn ended with {reason}: {message}".rstrip(": ")
        raise RequestError(rpc.TURN_FAILED, summary, {"details": message or summary})
    return PromptResponse(stop_reason=stop)


def config_options(agent: Agent | None) -> list[Any] | None:
    """The session's options, the model and the mode (None until its Agent is open)."""
    if agent is None:
        return None
    model = agent.model
    return [
        SessionConfigOptionSelect(
            id="model",
            name="Model",
            category="model",
            type="select",
            current_value=model.next_name,
            options=[
                SessionConfigSelectOption(value=name, name=name) for name in agent.model_names()
            ],
        ),
        modes.mode_option(agent.mode),
    ]
