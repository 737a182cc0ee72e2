"""The `trellis` command line: its parser, and the dispatch to the module of the command it names
(`app.commands`).

Every failure the user can cause (a bad config, a locked or corrupt database, an unknown model or
session) ends with one clear line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from app.closed_pipe import EXIT_READER_GONE, quiet_stdout
from app.exit_codes import EXIT_OK, EXIT_USAGE
from app.log_file import log_to_file
from app.version import version_line
from engine.errors import TrellisError
from engine.gc_policy import importing
from engine.os_text import storable_os_text
from engine.permission_mode import MODES
from engine.redaction import RedactingLogFilter

COMMANDS: dict[str | None, str] = {
    None: "console",
    "replay": "console",
    "run": "run",
    "sessions": "sessions",
    "show": "show",
    "export": "export",
    "fork": "fork",
    "delete": "delete",
    "search": "search",
    "diff": "diff",
    "rewind": "rewind",
    "checkpoints": "checkpoints",
    "stats": "stats",
    "models": "models",
    "acp": "acp",
    "store": "store",
    "trust": "trust",
    "serve": "serve",
}
"""Each command's module in `app.commands` (none: the console); each has `main(args, log_secrets)`."""


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
    """`stats`'s options take their vocabulary from the command's module (`--by`, `--since`),
    which `stats` loads to run in any case."""
    command_module("stats").options(stats)
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
    log_secrets = log_to_file()
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
        quiet_stdout()
        return EXIT_READER_GONE
    return code


def _dispatch(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    log_secrets: RedactingLogFilter | None,
) -> int:
    name = COMMANDS.get(args.command)
    if name is None:
        parser.error(f"unknown command {args.command}")
    entry: Callable[[argparse.Namespace, RedactingLogFilter | None], int]
    entry = command_module(name).main
    return entry(args, log_secrets)


def command_module(name: str) -> ModuleType:
    """The module of one command, imported when the command line names it: this is the one lazy
    import, so a command loads its own machinery and no other's (`trellis sessions` never loads
    the agent, the gateways or the console; start time is part of the interface). The collector
    is paused while it loads and what it leaves is frozen (`engine.gc_policy.importing`)."""
    path = f"app.commands.{name}"
    loaded = sys.modules.get(path)
    if loaded is not None:
        return loaded
    with importing():
        return importlib.import_module(path)


if __name__ == "__main__":
    raise SystemExit(main())
