"""The version of Trellis, in one place: the package metadata is built from it (pyproject.toml reads
`VERSION` statically), so `trellis --version` needs no metadata lookup."""

from __future__ import annotations

VERSION = "0.1.0"


def version_line() -> str:
    """What `trellis --version` prints."""
    return f"trellis {VERSION}"
