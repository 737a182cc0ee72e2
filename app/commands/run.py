"""`trellis run -p PROMPT`: one prompt headless, its reply (or every event, `--json`) on stdout.

Exit codes: 0 the turn ended, 1 it failed, 2 a command line or configuration that cannot run.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from app.attachment_files import attachments_of
from app.closed_pipe import EXIT_READER_GONE
from app.config_report import reported
from app.exit_codes import EXIT_OK, EXIT_TURN_FAILED, EXIT_USAGE
from app.printers import JsonPrinter, TextPrinter
from app.stop_signals import on_stop_signals
from engine.agent.factory import open_agent
from engine.agent.session_config import load_session_config
from engine.commands import REGISTRY
from engine.config import LoadedConfig, load_config_report
from engine.events import Attachment
from engine.os_text import storable_os_text
from engine.permission_mode import PermissionMode
from engine.redaction import RedactingLogFilter
from engine.store.chooser import open_store
from engine.store.settings import chosen_settings
from engine.tools.permission import HeadlessPolicy


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(run(args, log_secrets))


async def run(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
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
    mode = run_mode(args)
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
        config = reported(loaded, log_secrets)
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
                    agent.send(args.prompt, await attached(args.prompt, Path(agent.workspace)))
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
            return EXIT_READER_GONE
        if not args.json:
            # a session enters the store with its first message: a command alone stores nothing
            stored = "" if agent.stored else ", not stored: it holds no message"
            print(f"[session {agent.session_id}{stored}]", file=sys.stderr)
        return EXIT_TURN_FAILED if printer.turn_failed else EXIT_OK


def run_mode(args: argparse.Namespace) -> PermissionMode | None:
    """The mode `trellis run` asks for: `--mode`, or the flag that names one (`--approve-all`,
    `--deny-all`); None keeps a resumed session's own (a new one starts in `ask`)."""
    if args.approve_all:
        return "approve-all"
    if args.deny_all:
        return "read-only"
    mode: PermissionMode | None = args.mode
    return mode


async def attached(prompt: str, workspace: Path) -> list[Attachment]:
    """The files the prompt mentions as `@path`, as the console attaches them; one line on
    stderr for each that cannot be (the prompt is sent all the same)."""
    if "@" not in prompt:
        return []
    attachments, problems = await asyncio.to_thread(attachments_of, prompt, workspace)
    for problem in problems:
        print(f"trellis: not attached: {problem}", file=sys.stderr)
    return attachments


STOP_SIGNALS = ("SIGTERM", "SIGHUP")
"""Asked to stop from outside (a closed terminal, a service manager): end the turn cleanly, as
Ctrl-C does, rather than die with it open."""
