"""How `trellis run` shows a session's events: the reply as text, or every event as JSON Lines.

Each printer records whether the turn failed (an agent error, a turn that did not complete), which
the command turns into its exit code (`app.commands.run`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from app.closed_pipe import quiet_stdout
from engine.events import (
    AgentError,
    AssistantDelta,
    Event,
    LiveEvent,
    PermissionModeSet,
    SteerDropped,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
)
from engine.permission_mode import MODE_NAMES


class Output:
    """Stdout for a printer: when its reader goes away (`trellis run -p ... | head -1`), writes
    stop, `reader_gone` says so and `on_reader_gone` runs once (the command cancels the turn:
    no one reads what it would print)."""

    def __init__(self) -> None:
        self.reader_gone = False
        self.on_reader_gone: Callable[[], None] | None = None

    def write(self, text: str) -> None:
        if self.reader_gone:
            return
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            self.reader_gone = True
            quiet_stdout()
            if self.on_reader_gone is not None:
                self.on_reader_gone()


class TextPrinter:
    """Streams the reply to stdout; tool activity and the turn's end to stderr."""

    def __init__(self) -> None:
        self.turn_failed = False
        self.out = Output()
        self._open_line = False

    def __call__(self, event: Event | LiveEvent) -> None:
        match event.data:
            case AssistantDelta(text=text) if text:
                self.out.write(text)
                self._open_line = not text.endswith("\n")
            case ToolCallRecord(name=name, arguments=arguments):
                self._end_line()
                shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
                print(f"-> {name}({shown})", file=sys.stderr)
            case ToolResultRecord(is_error=True, content=content):
                print(f"   error: {content.splitlines()[0] if content else ''}", file=sys.stderr)
            case AgentError(message=message):
                self._end_line()
                print(f"trellis: {message}", file=sys.stderr)
                self.turn_failed = True
            case SteerDropped(text=text):
                print(f"trellis: steering dropped: {text}", file=sys.stderr)
            case PermissionModeSet(mode=mode, resumed=resumed):
                self._end_line()
                why = " (approve all ends when a session is reopened)" if resumed else ""
                print(f"trellis: mode: {MODE_NAMES[mode]}{why}", file=sys.stderr)
            case TurnEnd(reason=reason, message=message):
                self._end_line()
                if reason != "completed":
                    print(f"trellis: turn ended ({reason}): {message}", file=sys.stderr)
                    self.turn_failed = True
            case _:
                pass

    def _end_line(self) -> None:
        if self._open_line:
            self.out.write("\n")
            self._open_line = False


class JsonPrinter:
    """Every event, durable and live, one JSON object per line."""

    def __init__(self) -> None:
        self.turn_failed = False
        self.out = Output()

    def session(self, session_id: str, *, cwd: str, model: str, resumed: bool) -> None:
        """The first line: which session the events belong to, so a script can `show`,
        `export` or `fork` it after (events carry no session id)."""
        line = {"type": "session", "id": session_id, "cwd": cwd, "model": model}
        self.out.write(json.dumps({**line, "resumed": resumed}, ensure_ascii=False) + "\n")

    def __call__(self, event: Event | LiveEvent) -> None:
        self.out.write(event.model_dump_json() + "\n")
        match event.data:
            case TurnEnd(reason=reason) if reason != "completed":
                self.turn_failed = True
            case AgentError():
                self.turn_failed = True
            case _:
                pass
