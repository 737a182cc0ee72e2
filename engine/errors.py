"""The one base of every error a front end must handle.

Configuration, store, compaction, model, command and budget errors all derive from `TrellisError`,
so a console or a bridge can show any of them in place with its message instead of crashing.
"""

from __future__ import annotations


class TrellisError(Exception):
    """An error with a message meant for the person using Trellis."""
