"""`trellis`, `trellis --resume [ID]` and `trellis replay ID`: the Textual console, on a new, a
resumed or a replayed session."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from app.exit_codes import EXIT_OK, EXIT_USAGE
from app.tui.app import TrellisApp
from engine.agent.factory import held_secrets
from engine.agent.session_config import load_session_config
from engine.config import LoadedConfig, load_config_report
from engine.errors import TrellisError
from engine.redaction import RedactingLogFilter
from engine.store.chooser import open_store
from engine.store.settings import StoreSettings, chosen_settings


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    """The console on the session the command line names; exit 2 if it ended on an error."""
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
