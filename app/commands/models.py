"""`trellis models`: the models a session may bind, and the local servers asked for them."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from app.config_report import reported
from app.exit_codes import EXIT_OK, EXIT_USAGE
from engine.config import load_config_report
from engine.errors import TrellisError
from engine.local_servers import ServerAnswer, ask, local_servers
from engine.model_catalog import (
    choices_table,
    local_models,
    model_choices,
    with_named_local_models,
)
from engine.paths import user_config_file
from engine.redaction import RedactingLogFilter


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    """Every entry a session may bind: configured, made by a provider key in the environment,
    served by a local server (each is asked, on every well-known port); then the servers'
    answers and the user config's path."""
    loaded = load_config_report(Path.cwd(), trust_project=args.trust_project)
    config = reported(loaded, log_secrets)
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
