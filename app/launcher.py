"""The `trellis` console script: `trellis --version` is answered before the command line (argparse,
asyncio and every command's parser) is even imported; everything else goes to `app.cli.main`."""

from __future__ import annotations

import atexit
import gc
import os
import sys

PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"
"""pydantic's own switch for its plugins; set (even empty), pydantic's rules apply again."""


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        from app.version import version_line

        print(version_line())
        return 0
    # At exit, what is still alive is the modules' and the command's, and the OS takes it back:
    # the collector's passes over it during shutdown took a fifth of `trellis run -p` (issue 10).
    # Frozen objects are still freed by reference counting; only the cycle search skips them.
    atexit.register(gc.freeze)
    if PLUGINS_ENV not in os.environ:
        _without_pydantic_plugins()
    from app.cli import main as run_command_line

    return run_command_line()


def _without_pydantic_plugins() -> None:
    """Trellis loads no pydantic plugin unless `PYDANTIC_DISABLE_PLUGINS` is set (empty: load them
    all). Finding them reads the entry points of every installed distribution at the first model
    built, a tenth of what `trellis run -p` costs beyond its imports (issue 10); nothing in Trellis
    reports to one. pydantic has no public call for this: its loader's cache is set to no plugins,
    for this process only (the variable would reach the tools' child processes). A pydantic whose
    loader is laid out otherwise keeps its own behaviour: this only saves time."""
    try:
        from pydantic.plugin import _loader
    except ImportError:
        return
    if getattr(_loader, "_plugins", {}) is None:
        _loader._plugins = {}


if __name__ == "__main__":
    raise SystemExit(main())
