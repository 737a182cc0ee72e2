"""What the stored-session commands make of the options they share (`--store`, `--max-class`),
and the error for a command line they cannot act on."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from engine.errors import TrellisError
from engine.privacy import PrivacyClass
from engine.store.chooser import Store, open_store
from engine.store.settings import chosen_settings


class UsageError(TrellisError):
    """A command line the commands cannot act on: one line on stderr, exit 2 (`app.cli.main`)."""


def max_class_of(text: str | None) -> PrivacyClass | None:
    if text is None:
        return None
    try:
        return PrivacyClass.parse(text)
    except ValueError as exc:
        raise UsageError(f"--max-class: {exc}") from None


async def open_chosen_store(args: argparse.Namespace) -> Store:
    """`--store URL`, else the configured store seen from the current directory
    (engine.store.settings)."""
    return open_store(await asyncio.to_thread(chosen_settings, args.store, Path.cwd()))
