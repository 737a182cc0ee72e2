"""`trellis trust [DIR] [--revoke]`: a project's `.trellis/config.toml` trusted whole until the
file changes, or that trust forgotten."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.exit_codes import EXIT_OK, EXIT_USAGE
from engine.config import project_layer_of
from engine.paths import find_project_dir
from engine.redaction import RedactingLogFilter
from engine.trust import TrustStore, file_digest


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
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
