"""The `trellis` command: headless runs, stored sessions (list, show, export, fork, delete) and the
configured models.

Every failure the user can cause (a bad config, a locked or corrupt database, an unknown model or
session) ends with one clear line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.counts import counted
from engine.errors import TrellisError
from engine.os_text import storable_os_text
from engine.permission_mode import MODES

if TYPE_CHECKING:
    from engine.config import Config, LoadedConfig
    from engine.events import Attachment
    from engine.permission_mode import PermissionMode
    from engine.redaction import RedactingLogFilter
    from engine.store.settings import StoreSettings

# Each command imports what it uses when it runs (`trellis --version` and `trellis sessions` never
# load the agent, the gateways or the tools): start time is part of the interface.

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trellis",
        description="An agent console that shows what the model is actually given.",
    )
    parser.add_argument("--version", action=_PrintVersion, help="print the version and exit")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="open the console on a stored session (no ID: the newest of this directory)",
    )
    _model_and_script(parser, "the console's model entry (default: default_model)")
    _store_option(parser, default=None)
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="apply the project's .trellis/config.toml whole for this run, without recording trust",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Command)
    config = _config_options()
    command = sub.add_parser
    command(
        "run",
        parents=[config],
        setup=_run_options,
        help="run one prompt headless and print the reply",
    )
    command("sessions", setup=_sessions_options, help="list stored sessions, newest first")
    command("show", setup=_show, help="print a stored session's transcript")
    command(
        "export",
        setup=_export,
        help="export a stored session as Markdown, JSON or HTML, or send it as OTLP traces",
    )
    command("fork", setup=_fork, help="copy a stored session up to a point; prints the new id")
    command("delete", setup=_delete, help="delete a stored session (asks first)")
    command(
        "search",
        setup=_search_options,
        help="search the stored sessions' text (this workspace's; --all: every workspace's)",
    )
    command("diff", setup=_diff, help="print the patch of a stored session's turns, from its log")
    command(
        "rewind",
        parents=[config],
        setup=_rewind,
        help="take a stored session's files and conversation back to before a turn (asks first)",
    )
    command(
        "checkpoints",
        help="each workspace's checkpoints: the disk they take and the sessions they belong to",
    )
    command(
        "stats",
        setup=_stats_options,
        help="what the stored sessions used and cost: steps, tokens by part, cost per currency",
    )
    command(
        "models",
        parents=[config],
        help="list the models: configured, from provider keys, on local servers",
    )
    command(
        "acp",
        parents=[config],
        setup=_acp_options,
        help="speak ACP (Agent Client Protocol) on stdin/stdout, for editors that launch agents",
    )
    command(
        "store",
        setup=_store_commands,
        help="the session store: copy SQLite sessions to PostgreSQL",
    )
    command(
        "replay",
        parents=[config],
        setup=_replay_options,
        help="play a stored session back in the console",
    )
    command(
        "trust",
        setup=_trust_options,
        help="trust a project's .trellis/config.toml: all of it applies until the file changes",
    )
    command(
        "serve",
        parents=[config],
        setup=_serve_options,
        help="serve ACP over WebSocket at ws://HOST:PORT/acp and streamable HTTP at "
        "http://HOST:HTTP_PORT/acp",
    )
    return parser


class _Command(argparse.ArgumentParser):
    """A command whose own arguments are added when it first parses or shows its help: adding
    every command's arguments to run one was 2% of `trellis run -p`'s start (issue 10)."""

    def __init__(
        self,
        *args: Any,
        setup: Callable[[argparse.ArgumentParser], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._setup = setup

        self.needed: list[tuple[str, str]] = []
        """(dest, flags) of the options the command cannot run without (`needed_option`)."""

    def _ready(self) -> None:
        setup, self._setup = self._setup, None
        if setup is not None:
            setup(self)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, but a needed option is checked only once every argument is known:
        argparse checks required options first, and `run --bogus` said "-p/--prompt is
        required" where the mistake is the unknown `--bogus` (the caller names those)."""
        self._ready()
        parsed, extras = super().parse_known_args(args, namespace)
        if not extras:
            missing = [flags for dest, flags in self.needed if getattr(parsed, dest) is None]
            if missing:
                self.error(f"the following arguments are required: {', '.join(missing)}")
        return parsed, extras

    def format_usage(self) -> str:
        self._ready()
        return super().format_usage()

    def format_help(self) -> str:
        self._ready()
        return super().format_help()


def needed_option(parser: argparse.ArgumentParser, *flags: str, **options: Any) -> None:
    """An option the command cannot run without, checked after the unknown arguments are
    (`_Command.parse_known_args`)."""
    action = parser.add_argument(*flags, **options)
    assert isinstance(parser, _Command)
    parser.needed.append((action.dest, "/".join(flags)))


def _run_options(run: argparse.ArgumentParser) -> None:
    # argv is bytes: undecodable ones are escaped so the user's words can enter the log
    needed_option(
        run, "-p", "--prompt", type=storable_os_text, help="the prompt, or a /command (not empty)"
    )
    _model_and_script(run, "a configured model entry (default: the config's default_model)")
    run.add_argument(
        "--cwd", type=Path, default=None, help="the workspace (default: the current directory)"
    )
    run.add_argument(
        "--resume",
        metavar="ID",
        help="continue a stored session, in its own workspace and with that workspace's config",
    )
    run.add_argument("--json", action="store_true", help="print every event as JSON Lines")
    _store_option(run)
    run.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="TOOL",
        help="in the ask and accept-edits modes, let TOOL run when it would ask (repeatable); "
        "with no one to ask, any other call that asks is denied",
    )
    perm = run.add_mutually_exclusive_group()
    perm.add_argument(
        "--mode",
        choices=MODES,
        default=None,
        help="the permission mode: ask (the default for a new session: calls that need "
        "permission are denied unless --allow names the tool), accept-edits (file edits run), "
        "read-only (write and shell tools are refused), approve-all (every tool runs); a resumed "
        "session keeps its own mode, except approve-all",
    )
    perm.add_argument(
        "--approve-all", action="store_true", help="let every tool run: --mode approve-all"
    )
    perm.add_argument(
        "--deny-all",
        action="store_true",
        help="refuse every tool that needs permission: --mode read-only",
    )


def _sessions_options(sessions: argparse.ArgumentParser) -> None:
    sessions.add_argument("--cwd", type=Path, default=None, help="only sessions of this workspace")
    sessions.add_argument("--all", action="store_true", help="sessions of every workspace")
    sessions.add_argument("--limit", type=int, default=20, help="at most this many (1 or more)")
    sessions.add_argument("--json", action="store_true", help="print one JSON array")
    _store_option(sessions)


def _stats_options(stats: argparse.ArgumentParser) -> None:
    from app.stats_command import stats_options

    stats_options(stats)
    _store_option(stats)


def _acp_options(acp: argparse.ArgumentParser) -> None:
    _model_and_script(acp, "the model entry of new sessions (default: default_model)")
    acp.add_argument(
        "--root",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="a session's cwd must lie under DIR (repeatable; default: the current directory)",
    )
    _store_option(acp)


def _store_commands(store: argparse.ArgumentParser) -> None:
    store_sub = store.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    copy = store_sub.add_parser(
        "copy", help="copy every SQLite session into a PostgreSQL store, verifying each"
    )
    copy.add_argument(
        "--to", required=True, metavar="URL", help="postgresql://user@host/db (no password)"
    )
    copy.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=None,
        metavar="FILE",
        help="the SQLite file (default: sessions.sqlite in the data directory)",
    )


def _replay_options(replay: argparse.ArgumentParser) -> None:
    replay.add_argument("id", help="the session id, or a unique prefix of it")
    _store_option(replay)


def _trust_options(trust: argparse.ArgumentParser) -> None:
    trust.add_argument(
        "dir", nargs="?", type=Path, default=None, help="the project (default: the current one)"
    )
    trust.add_argument("--revoke", action="store_true", help="forget the trust instead")


def _serve_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", help="the address to bind (default: [serve] host, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="the port (default: [serve] port, 8765; 0: any)")
    serve.add_argument(
        "--http-port",
        type=int,
        help="the streamable HTTP port (default: [serve] http_port, else the next port; 0: any)",
    )
    _store_option(serve)


def _store_option(parser: argparse.ArgumentParser, default: object = argparse.SUPPRESS) -> None:
    """`--store URL`, before the command or after it: a command's own option leaves the value
    given before the command alone unless it is given too (argparse would reset it)."""
    parser.add_argument(
        "--store",
        metavar="URL",
        default=default,
        help="the sessions' PostgreSQL store, postgresql://user@host/db without a password "
        "(default: TRELLIS_STORE_URL, [store] url of the user config, else SQLite)",
    )


class _PrintVersion(argparse.Action):
    """`--version` among other arguments (alone, `app.launcher` answers it before this module
    loads)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from app.version import version_line

        print(version_line())
        parser.exit(EXIT_OK)


def _show(show: argparse.ArgumentParser) -> None:
    """`show`, `export`, `fork`, `delete`: each takes an id or a unique id prefix, as git does."""
    show.add_argument("id", metavar="ID")
    show.add_argument("--at", type=int, metavar="SEQ", help="the transcript as of this seq")
    _store_option(show)


def _export(export: argparse.ArgumentParser) -> None:
    export.add_argument("id", metavar="ID")
    needed_option(export, "--format", metavar="md|json|html|otlp")
    export.add_argument("-o", "--output", type=Path, metavar="FILE", help="(default: stdout)")
    export.add_argument(
        "--endpoint",
        metavar="URL",
        help="otlp: the collector to send the traces to (default: [telemetry] otlp_endpoint)",
    )
    export.add_argument(
        "--max-class",
        metavar="CLASS",
        help="redact everything above public, internal, private or restricted",
    )
    _store_option(export)


def _fork(fork: argparse.ArgumentParser) -> None:
    fork.add_argument("id", metavar="ID")
    fork.add_argument("--at", type=int, metavar="SEQ", help="keep the events before this seq")
    _store_option(fork)


def _delete(delete: argparse.ArgumentParser) -> None:
    delete.add_argument("id", metavar="ID")
    delete.add_argument("--yes", action="store_true", help="do not ask")
    _store_option(delete)


def _search_options(search: argparse.ArgumentParser) -> None:
    search.add_argument(
        "query",
        metavar="QUERY",
        type=storable_os_text,
        help='words that must all appear; "a phrase", word* (a prefix), a OR b, -word (not)',
    )
    search.add_argument("--cwd", type=Path, default=None, help="the sessions of this workspace")
    search.add_argument("--all", action="store_true", help="the sessions of every workspace")
    search.add_argument("--limit", type=int, default=20, help="at most this many hits (1 or more)")
    search.add_argument("--json", action="store_true", help="print one JSON array")
    search.add_argument(
        "--max-class",
        metavar="CLASS",
        help="leave out hits whose text an export with this --max-class would redact",
    )
    _store_option(search)


def _diff(diff: argparse.ArgumentParser) -> None:
    diff.add_argument("id", metavar="ID")
    diff.add_argument("--turn", type=int, metavar="N", help="only this turn's changes")
    _store_option(diff)


def _rewind(rewind: argparse.ArgumentParser) -> None:
    rewind.add_argument("id", metavar="ID")
    needed_option(
        rewind, "--to", metavar="TURN", help="the turn to go back to before; undo: the last rewind"
    )
    only = rewind.add_mutually_exclusive_group()
    only.add_argument("--code", action="store_true", help="only the files")
    only.add_argument("--conversation", action="store_true", help="only the conversation")
    rewind.add_argument("--yes", action="store_true", help="do not ask")
    rewind.add_argument(
        "--overwrite",
        action="store_true",
        help="replace files changed outside the agent since it left them (else nothing is done)",
    )
    _store_option(rewind)


def _model_and_script(parser: argparse.ArgumentParser, model_help: str) -> None:
    parser.add_argument("--model", help=model_help)
    parser.add_argument(
        "--script", type=Path, help="a JSON or TOML script of replies for the scripted model"
    )


def _config_options() -> _Command:
    """The options of every command that loads a config (a parent of theirs, so a `_Command`)."""
    options = _Command(add_help=False)
    options.add_argument(
        "--trust-project",
        action="store_true",
        help="apply the project's .trellis/config.toml whole for this run, without recording trust",
    )
    return options


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    log_secrets = _log_to_file()
    try:
        code = _dispatch(parser, args, log_secrets)
        # what is still buffered fails here, not in the interpreter's flush at exit (which
        # reports a closed pipe in no way a caller can see)
        sys.stdout.flush()
    except TrellisError as exc:  # every error a front end must handle (engine.errors)
        print(f"trellis: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader of stdout went away (`| head`)
        from app.closed_pipe import EXIT_READER_GONE, quiet_stdout

        quiet_stdout()
        return EXIT_READER_GONE
    return code


def _dispatch(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    log_secrets: RedactingLogFilter | None,
) -> int:
    match args.command:
        case None | "replay":
            return _console(args, log_secrets)
        case "run":
            return asyncio.run(_run(args, log_secrets))
        case "sessions":
            return asyncio.run(_sessions(args))
        case "show" | "export" | "fork" | "delete":
            from app import session_commands

            command = getattr(session_commands, args.command)
            return int(asyncio.run(command(args)))
        case "search":
            from app.session_search import search

            return asyncio.run(search(args))
        case "diff":
            from app.session_diff import diff

            return asyncio.run(diff(args))
        case "rewind":
            from app.session_rewind import rewind

            return asyncio.run(rewind(args, lambda loaded: _reported(loaded, log_secrets)))
        case "checkpoints":
            from app.checkpoints_command import checkpoints

            return asyncio.run(checkpoints(args))
        case "stats":
            from app.stats_command import stats

            return asyncio.run(stats(args))
        case "models":
            return _models(args, log_secrets)
        case "acp":
            return asyncio.run(_acp(args, log_secrets))
        case "store":
            return asyncio.run(_store_copy(args))
        case "trust":
            return _trust(args)
        case "serve":
            return asyncio.run(_serve(args, log_secrets))
        case _:
            parser.error(f"unknown command {args.command}")


def _log_to_file() -> RedactingLogFilter | None:
    """Engine diagnostics (a retried flush, a failing hook, a failed model call) go to
    `trellis.log` in the data directory, never as tracebacks between the reply's lines; what the
    user must know is printed from the events.

    Returns the filter that keeps secrets out of the file, to be given the configuration's
    secrets once it is read (None when an embedding program configured logging itself).
    """
    from engine.paths import log_file_path
    from engine.redaction import RedactingLogFilter, Redactor

    root = logging.getLogger()
    if root.handlers:
        return None
    path = log_file_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        handler = logging.NullHandler()  # an unwritable data dir is reported by the store
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    secrets = RedactingLogFilter(Redactor())
    handler.addFilter(secrets)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return secrets


async def _run(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    from engine.gc_policy import importing

    with importing():
        from app.printers import JsonPrinter, TextPrinter
        from app.stop_signals import on_stop_signals
        from engine.agent.factory import open_agent
        from engine.agent.session_config import load_session_config
        from engine.commands import REGISTRY
        from engine.config import load_config_report
        from engine.store.chooser import open_store
        from engine.store.settings import chosen_settings
        from engine.tools.permission import HeadlessPolicy

    if not args.prompt.strip():
        print("trellis: -p/--prompt is empty: give the words to send", file=sys.stderr)
        return EXIT_USAGE
    cwd = (args.cwd or Path.cwd()).resolve()
    if args.resume is not None and args.cwd is not None:
        print("trellis: --cwd and --resume: a resumed session keeps its workspace", file=sys.stderr)
        return EXIT_USAGE
    if not cwd.is_dir():
        print(f"trellis: --cwd {storable_os_text(str(cwd))} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    mode = _run_mode(args)
    if mode == "read-only" and args.allow:
        print(
            f"trellis: --allow {args.allow[0]}: read-only mode refuses every tool that needs "
            "permission (--deny-all is --mode read-only); leave out one or the other",
            file=sys.stderr,
        )
        return EXIT_USAGE
    policy = HeadlessPolicy(allow=frozenset(args.allow))
    loaded: LoadedConfig | None = None
    if args.resume is None:  # a bad config is reported before the store is touched
        loaded = await asyncio.to_thread(load_config_report, cwd, trust_project=args.trust_project)
    async with open_store(await asyncio.to_thread(chosen_settings, args.store, cwd)) as store:
        resume: str | None = None
        if loaded is None:  # resuming: an id or a unique prefix of one
            resume = (await store.resolve(args.resume)).id
            loaded = await load_session_config(store, resume, trust_project=args.trust_project)
        config = _reported(loaded, log_secrets)
        telemetry = None
        if config.telemetry.otlp_endpoint:  # the OpenTelemetry SDK loads only when configured
            from app.telemetry import LiveTelemetry

            telemetry = LiveTelemetry(config.telemetry)
        agent = await open_agent(
            config=config,
            cwd=cwd,
            store=store,
            model=args.model,
            session_id=resume,
            script=args.script,
            responder=policy,
            mode=mode,
        )
        printer = JsonPrinter() if args.json else TextPrinter()
        printer.out.on_reader_gone = agent.cancel
        if isinstance(printer, JsonPrinter):
            printer.session(
                agent.session_id,
                cwd=storable_os_text(str(agent.workspace)),
                model=agent.model.name,
                resumed=resume is not None,
            )
        # the events of opening (model/bind, areas) first; a resumed session's from the store
        await agent.subscribe_from(printer, 0)
        if telemetry is not None:
            telemetry.watch(agent, config.models)
        # the tool's processes are killed, its result and `turn/end {cancelled}` are stored, and
        # aclose gives the lease back, instead of the process dying with the turn open
        with on_stop_signals(STOP_SIGNALS, agent.cancel):
            try:
                if REGISTRY.is_command(args.prompt):
                    result = await REGISTRY.run(agent, args.prompt)
                    if not args.json:
                        print(result.text, file=sys.stderr if not result.ok else sys.stdout)
                    if not result.ok:
                        return EXIT_USAGE
                else:
                    agent.send(args.prompt, await _attached(args.prompt, Path(agent.workspace)))
                await agent.when_idle()
            finally:
                await agent.aclose()
                if telemetry is not None and not await asyncio.to_thread(telemetry.close):
                    print(
                        f"trellis: not every span reached {config.telemetry.traces_url()} "
                        "(is a collector listening there?)",
                        file=sys.stderr,
                    )
        if printer.out.reader_gone:
            from app.closed_pipe import EXIT_READER_GONE

            return EXIT_READER_GONE
        if not args.json:
            # a session enters the store with its first message: a command alone stores nothing
            stored = "" if agent.stored else ", not stored: it holds no message"
            print(f"[session {agent.session_id}{stored}]", file=sys.stderr)
        return EXIT_TURN_FAILED if printer.turn_failed else EXIT_OK


def _run_mode(args: argparse.Namespace) -> PermissionMode | None:
    """The mode `trellis run` asks for: `--mode`, or the flag that names one (`--approve-all`,
    `--deny-all`); None keeps a resumed session's own (a new one starts in `ask`)."""
    if args.approve_all:
        return "approve-all"
    if args.deny_all:
        return "read-only"
    mode: PermissionMode | None = args.mode
    return mode


async def _attached(prompt: str, workspace: Path) -> list[Attachment]:
    """The files the prompt mentions as `@path`, as the console attaches them; one line on
    stderr for each that cannot be (the prompt is sent all the same)."""
    if "@" not in prompt:
        return []
    from app.attachment_files import attachments_of

    attachments, problems = await asyncio.to_thread(attachments_of, prompt, workspace)
    for problem in problems:
        print(f"trellis: not attached: {problem}", file=sys.stderr)
    return attachments


STOP_SIGNALS = ("SIGTERM", "SIGHUP")
"""Asked to stop from outside (a closed terminal, a service manager): end the turn cleanly, as
Ctrl-C does, rather than die with it open."""


def _reported(loaded: LoadedConfig, log_secrets: RedactingLogFilter | None) -> Config:
    """The config, after one line on stderr naming what an untrusted project file could not set;
    from here on `trellis.log` is kept clear of the secrets it makes Trellis hold."""
    if log_secrets is not None:
        from engine.agent.factory import held_secrets

        log_secrets.redactor = held_secrets(loaded.config)
    notice = loaded.project.notice() if loaded.project is not None else None
    if notice is not None:
        print(f"trellis: {notice}", file=sys.stderr)
    return loaded.config


def _console(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    """`trellis` and `trellis --resume [ID]`: the Textual console (imported only here)."""
    from app.tui.app import TrellisApp
    from engine.agent.factory import held_secrets
    from engine.store.settings import chosen_settings

    cwd = Path.cwd().resolve()
    store = chosen_settings(args.store, cwd)
    session_id, loaded = asyncio.run(_console_session(args, cwd, store))
    replay = None
    if args.command == "replay":  # the stored session played back, not a live one
        replay, session_id = session_id, None
    config = loaded.config  # the console asks about skipped project keys with its trust dialog
    if log_secrets is not None:
        log_secrets.redactor = held_secrets(config)
    app = TrellisApp(
        config=config,
        cwd=cwd,
        store=store,
        session_id=session_id,
        model=getattr(args, "model", None),
        script=getattr(args, "script", None),
        replay=replay,
        project=loaded.project,
    )
    app.run()
    if app.error is not None:
        print(f"trellis: {app.error}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


async def _console_session(
    args: argparse.Namespace, cwd: Path, settings: StoreSettings
) -> tuple[str | None, LoadedConfig]:
    """The session to open or replay (None: a new one) and the configuration it runs with. An id
    is resolved here, before the console takes the terminal: an unknown or ambiguous one is a line
    on stderr, and a unique prefix is enough, as git's are."""
    from engine.agent.session_config import load_session_config
    from engine.config import load_config_report
    from engine.store.chooser import open_store

    if args.command == "replay":
        async with open_store(settings) as store:
            session_id = (await store.resolve(args.id)).id
        return session_id, await asyncio.to_thread(
            load_config_report, cwd, trust_project=args.trust_project
        )
    if args.resume is None:
        return None, await asyncio.to_thread(
            load_config_report, cwd, trust_project=args.trust_project
        )
    async with open_store(settings) as store:
        if args.resume:  # an id or a unique prefix of one
            session_id = (await store.resolve(args.resume)).id
        else:
            page = await store.list(cwd=str(cwd), limit=1)
            if not page.sessions:
                raise TrellisError(f"no stored session in {cwd} to resume")
            session_id = page.sessions[0].id
        loaded = await load_session_config(store, session_id, trust_project=args.trust_project)
    return session_id, loaded


async def _sessions(args: argparse.Namespace) -> int:
    from engine.paths import sessions_db_path
    from engine.store.catalog import open_catalog
    from engine.store.settings import chosen_settings

    if args.limit < 1:
        print(f"trellis: --limit must be 1 or more, got {args.limit}", file=sys.stderr)
        return EXIT_USAGE
    # stored as the session's workspace is: a name that is not UTF-8 escaped (engine.os_text)
    cwd = None if args.all else storable_os_text(str((args.cwd or Path.cwd()).resolve()))
    settings = await asyncio.to_thread(chosen_settings, args.store, Path.cwd())
    async with open_catalog(settings, sessions_db_path()) as catalog:
        page = await catalog.list(cwd=cwd, limit=args.limit)
    if args.json:
        import json

        print(json.dumps([info.record() for info in page.sessions], ensure_ascii=False))
        return EXIT_OK
    if not page.sessions:
        print("no sessions" + ("" if cwd is None else f" in {cwd} (use --all for every workspace)"))
        return EXIT_OK
    from app.session_rows import session_table

    # a header row even when piped, as `ps` prints one: scripts read `--json`
    for line in session_table(page.sessions, workspaces=cwd is None):
        print(line)
    return EXIT_OK


async def _acp(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    """`trellis acp`: ACP over stdio (`app.acp.stdio`); stdout carries nothing else."""
    from app.acp.core import AcpOptions
    from app.acp.stdio import protect_stdout, serve_stdio
    from engine.config import load_config_report
    from engine.store.settings import chosen_settings

    here = Path.cwd().resolve()
    roots = [root.resolve() for root in args.root] or [here]
    for root in roots:
        if not root.is_dir():
            print(
                f"trellis: --root {storable_os_text(str(root))} is not a directory", file=sys.stderr
            )
            return EXIT_USAGE
    # a bad config or store is reported before the protocol starts, as one line on stderr
    loaded = await asyncio.to_thread(load_config_report, here, trust_project=args.trust_project)
    _reported(loaded, log_secrets)
    options = AcpOptions(
        store=await asyncio.to_thread(chosen_settings, args.store, here),
        roots=roots,
        model=args.model,
        script=args.script,
        trust_project=args.trust_project,
    )
    protocol = protect_stdout()
    await serve_stdio(options, sys.stdin.buffer, protocol)
    return EXIT_OK


async def _store_copy(args: argparse.Namespace) -> int:
    """`trellis store copy --to URL`: one line per session, then the totals."""
    from engine.paths import sessions_db_path
    from engine.store.copy import copy_sessions
    from engine.store.postgres.store import PostgresStore
    from engine.store.settings import url_settings
    from engine.store.sqlite.store import SQLiteStore

    source: Path = args.source or sessions_db_path()
    if not await asyncio.to_thread(source.is_file):
        print(f"trellis: --from {source}: no such SQLite file", file=sys.stderr)
        return EXIT_USAGE
    target = await asyncio.to_thread(url_settings, args.to, "--to")
    assert target.url is not None
    copied = skipped = events = 0
    async with (
        SQLiteStore(source) as sqlite,
        PostgresStore(target.url, password=target.password()) as postgres,
    ):
        async for session in copy_sessions(sqlite, postgres):
            verb = "already there" if session.skipped else "copied"
            print(
                f"{verb} {session.id}: {counted(session.events, 'event')}, last seq {session.last_seq}"
            )
            skipped += session.skipped
            copied += not session.skipped
            events += session.events
    print(
        f"{counted(copied, 'session')} copied, {skipped} already there, "
        f"{counted(events, 'event')} verified "
        f"in {target.shown}",
        file=sys.stderr,
    )
    return EXIT_OK


def _models(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    """Every entry a session may bind: configured, made by a provider key in the environment,
    served by a local server (each is asked, on every well-known port); then the servers'
    answers and the user config's path."""
    from engine.config import load_config_report
    from engine.local_servers import ServerAnswer, ask, local_servers
    from engine.model_catalog import (
        choices_table,
        local_models,
        model_choices,
        with_named_local_models,
    )
    from engine.paths import user_config_file

    loaded = load_config_report(Path.cwd(), trust_project=args.trust_project)
    config = _reported(loaded, log_secrets)
    servers = local_servers() if config.discovery.local else ()
    answers: tuple[ServerAnswer, ...] = asyncio.run(ask(servers)) if servers else ()
    config = config.with_models(local_models(answers))
    for line in choices_table(model_choices(config), marked=config.default_model):
        print(line.rstrip())
    print("\n* default_model")
    if not config.discovery.local:
        print("local servers: not asked ([discovery] local = false)")
    elif not servers:
        print("local servers: none to ask (TRELLIS_LOCAL_SERVERS is empty)")
    for answer in answers:
        print(f"local server {answer.describe()}")
    print(f"user config: {user_config_file()}")
    try:
        asyncio.run(with_named_local_models(config, (config.default_model,), servers))
    except TrellisError as exc:
        print(f"trellis: default_model: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


async def _serve(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    """`trellis serve`: ACP over WebSocket (websockets is imported only here)."""
    from app.acp.serve import serve
    from engine.config import load_config_report
    from engine.store.settings import chosen_settings

    cwd = Path.cwd().resolve()
    for option, value in (("--port", args.port), ("--http-port", args.http_port)):
        if value is not None and not 0 <= value <= 65535:
            print(f"trellis: {option} must be 0 to 65535, got {value}", file=sys.stderr)
            return EXIT_USAGE
    loaded = await asyncio.to_thread(load_config_report, cwd, trust_project=args.trust_project)
    config = _reported(loaded, log_secrets)
    await serve(
        config.serve,
        store=await asyncio.to_thread(chosen_settings, args.store, cwd),
        started_in=cwd,
        host=args.host,
        port=args.port,
        http_port=args.http_port,
        trust_project=args.trust_project,
        log_secrets=log_secrets,
    )
    return EXIT_OK


def _trust(args: argparse.Namespace) -> int:
    from engine.config import project_layer_of
    from engine.paths import find_project_dir
    from engine.trust import TrustStore, file_digest

    directory: Path = args.dir or Path.cwd()
    if not directory.is_dir():
        print(f"trellis: {directory} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    store = TrustStore()
    if args.revoke:
        project = find_project_dir(directory) or directory.resolve()
        if store.revoke(project):
            print(f"revoked trust in {project}: its .trellis/config.toml is untrusted again")
        else:
            print(f"{project} was not trusted; nothing changed")
        return EXIT_OK
    found = project_layer_of(directory)
    if found is None:
        print(
            f"trellis: no .trellis/config.toml in {directory.resolve()} or its parents",
            file=sys.stderr,
        )
        return EXIT_USAGE
    project, data = found
    record = store.trust(project, file_digest(data))
    print(
        f"trusted {project}: its .trellis/config.toml (sha256 {record.sha256[:12]}) applies "
        "whole until the file changes"
    )
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
