"""`trellis.log` in the data directory: where engine diagnostics go, with secrets kept out."""

from __future__ import annotations

import logging

from engine.paths import log_file_path
from engine.redaction import RedactingLogFilter, Redactor


def log_to_file() -> RedactingLogFilter | None:
    """Engine diagnostics (a retried flush, a failing hook, a failed model call) go to
    `trellis.log` in the data directory, never as tracebacks between the reply's lines; what the
    user must know is printed from the events.

    Returns the filter that keeps secrets out of the file, to be given the configuration's
    secrets once it is read (None when an embedding program configured logging itself).
    """
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
