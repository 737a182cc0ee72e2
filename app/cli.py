"""The `trellis` command: headless runs, the session list and the configured models.

Every failure the user can cause (a bad config, a locked or corrupt database, an unknown model or
session) ends with one clear line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from engine.agent import Agent, open_agent
from engine.commands import REGISTRY
from engine.config import ConfigError, load_config
from engine.context.areas import AreaLoadError
from engine.events import (
    AgentError,
    AssistantDelta,
    Event,
    LiveEvent,
    SteerDropped,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
)
from engine.gateway.scripted import ScriptError
from engine.paths import log_file_path, sessions_db_path
from engine.store import StoreError
from engine.store.sqlite import SQLiteStore
from engine.tools.mcp import McpServerError
from engine.tools.permission import HeadlessPolicy

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trellis",
        description="An agent console that shows what the model is actually given.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run one prompt headless and print the reply")
    run.add_argument("-p", "--prompt", required=True, help="the prompt, or a /command")
    run.add_argument(
        "--model", help="a configured model entry (default: the config's default_model)"
    )
    run.add_argument(
        "--script", type=Path, help="a JSON or TOML script of replies for the scripted model"
    )
    run.add_argument(
        "--cwd", type=Path, default=None, help="the workspace (default: the current directory)"
    )
    run.add_argument("--json", action="store_true", help="print every event as JSON Lines")
    run.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="TOOL",
        help="let TOOL run without asking (repeatable)",
    )
    perm = run.add_mutually_exclusive_group()
    perm.add_argument("--approve-all", action="store_true", help="let every tool run")
    perm.add_argument(
        "--deny-all", action="store_true", help="refuse every tool that needs permission"
    )

    sessions = sub.add_parser("sessions", help="list stored sessions, newest first")
    sessions.add_argument("--cwd", type=Path, default=None, help="only sessions of this workspace")
    sessions.add_argument("--all", action="store_true", help="sessions of every workspace")
    sessions.add_argument("--limit", type=int, default=20)

    sub.add_parser("models", help="list the configured model entries")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    _log_to_file()
    try:
        match args.command:
            case "run":
                return asyncio.run(_run(args))
            case "sessions":
                return asyncio.run(_sessions(args))
            case "models":
                return _models()
            case _:
                parser.error(f"unknown command {args.command}")
    except (ConfigError, StoreError, ScriptError, AreaLoadError, McpServerError) as exc:
        print(f"trellis: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    return EXIT_OK


def _log_to_file() -> None:
    """Engine diagnostics (a retried flush, a failing hook) go to `trellis.log` in the data
    directory, never as tracebacks between the reply's lines; what the user must know is printed
    from the events."""
    root = logging.getLogger()
    if root.handlers:
        return  # an embedding program configured logging itself
    path = log_file_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        handler = logging.NullHandler()  # an unwritable data dir is reported by the store
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)


async def _run(args: argparse.Namespace) -> int:
    cwd = (args.cwd or Path.cwd()).resolve()
    if not cwd.is_dir():
        print(f"trellis: --cwd {cwd} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    config = load_config(cwd)
    policy = HeadlessPolicy(
        allow=frozenset(args.allow), approve_all=args.approve_all, deny_all=args.deny_all
    )
    async with SQLiteStore(sessions_db_path()) as store:
        agent = await open_agent(
            config=config,
            cwd=cwd,
            store=store,
            model=args.model,
            script=args.script,
            responder=policy,
        )
        printer = _JsonPrinter() if args.json else _TextPrinter()
        agent.subscribe(printer, from_seq=0)  # the events of opening (model/bind, areas) first
        with _cancel_on_stop_signals(agent):
            try:
                if REGISTRY.is_command(args.prompt):
                    result = await REGISTRY.run(agent, args.prompt)
                    if not args.json:
                        print(result.text, file=sys.stderr if not result.ok else sys.stdout)
                    if not result.ok:
                        return EXIT_USAGE
                else:
                    agent.send(args.prompt)
                await agent.when_idle()
            finally:
                await agent.dispose()
        if not args.json:
            print(f"[session {agent.session_id}]", file=sys.stderr)
        return printer.exit_code


STOP_SIGNALS = ("SIGTERM", "SIGHUP")
"""Asked to stop from outside (a closed terminal, a service manager): end the turn cleanly, as
Ctrl-C does, rather than die with it open."""


@contextmanager
def _cancel_on_stop_signals(agent: Agent) -> Iterator[None]:
    """While the run lasts, SIGTERM and SIGHUP cancel the running turn: the tool's processes are
    killed, its result and `turn/end {cancelled}` are stored, and dispose gives the lease back,
    instead of the process dying with the turn open and the command still running."""
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for name in STOP_SIGNALS:
        signum = getattr(signal, name, None)  # SIGHUP does not exist on Windows
        if signum is None:
            continue
        try:
            loop.add_signal_handler(signum, agent.cancel)
        except NotImplementedError:  # an event loop without signal support (Windows)
            continue
        handled.append(signum)
    try:
        yield
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)


class _TextPrinter:
    """Streams the reply to stdout; tool activity and the turn's end to stderr."""

    def __init__(self) -> None:
        self.exit_code = EXIT_OK
        self._open_line = False

    def __call__(self, event: Event | LiveEvent) -> None:
        match event.data:
            case AssistantDelta(text=text) if text:
                sys.stdout.write(text)
                sys.stdout.flush()
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
                self.exit_code = EXIT_TURN_FAILED
            case SteerDropped(text=text):
                print(f"trellis: steering dropped: {text}", file=sys.stderr)
            case TurnEnd(reason=reason, message=message):
                self._end_line()
                if reason != "completed":
                    print(f"trellis: turn ended ({reason}): {message}", file=sys.stderr)
                    self.exit_code = EXIT_TURN_FAILED
            case _:
                pass

    def _end_line(self) -> None:
        if self._open_line:
            sys.stdout.write("\n")
            self._open_line = False


class _JsonPrinter:
    """Every event, durable and live, one JSON object per line."""

    def __init__(self) -> None:
        self.exit_code = EXIT_OK

    def __call__(self, event: Event | LiveEvent) -> None:
        sys.stdout.write(event.model_dump_json() + "\n")
        sys.stdout.flush()
        match event.data:
            case TurnEnd(reason=reason) if reason != "completed":
                self.exit_code = EXIT_TURN_FAILED
            case AgentError():
                self.exit_code = EXIT_TURN_FAILED
            case _:
                pass


async def _sessions(args: argparse.Namespace) -> int:
    cwd = None if args.all else str((args.cwd or Path.cwd()).resolve())
    async with SQLiteStore(sessions_db_path()) as store:
        page = await store.list(cwd=cwd, limit=args.limit)
    if not page.sessions:
        print("no sessions" + ("" if cwd is None else f" in {cwd} (use --all for every workspace)"))
        return EXIT_OK
    for info in page.sessions:
        when = datetime.fromtimestamp(info.updated).strftime("%Y-%m-%d %H:%M")
        print(
            f"{info.id}  {when}  {info.event_count:>6} events  {info.model or '-':<12} {info.title}"
        )
    return EXIT_OK


def _models() -> int:
    config = load_config(Path.cwd())
    for name, entry in config.models.items():
        marker = "*" if name == config.default_model else " "
        target = entry.model or entry.provider
        print(
            f"{marker} {name:<16} {entry.provider:<10} {target}  egress<={entry.effective_egress().name}"
        )
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
