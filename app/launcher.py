"""The `trellis` console script: `trellis --version` is answered before the command line (argparse,
asyncio and every command's parser) is even imported; everything else goes to `app.cli.main`."""

from __future__ import annotations

import importlib
import os
import sys
import types

PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"
"""pydantic's own switch for its plugins; set (even empty), pydantic's rules apply again."""


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        from app.version import version_line

        print(version_line())
        return 0
    if PLUGINS_ENV not in os.environ:
        _without_pydantic_plugins()
    from engine.gc_policy import freeze_at_exit, importing

    freeze_at_exit()
    with importing():
        from app.cli import main as run_command_line
    return run_command_line()


PLUGIN_LOADER = "pydantic.plugin._loader"
"""pydantic's plugin loader: importing it imports `importlib.metadata` (and with it `email`,
`zipfile`, `csv`, ...), 20-25 ms of CPU before the first model is built."""


def _without_pydantic_plugins() -> None:
    """Trellis loads no pydantic plugin unless `PYDANTIC_DISABLE_PLUGINS` is set (empty: load them
    all). Finding them reads the entry points of every installed distribution at the first model
    built, a tenth of what `trellis run -p` costs beyond its imports (issue 10); nothing in Trellis
    reports to one. pydantic has no public call for this: a stand-in for its loader module answers
    `get_plugins()` with none, for this process only (the variable would reach the tools' child
    processes), so neither the entry points nor `importlib.metadata` are read. Any other name
    asked of the stand-in loads the real loader, told it has no plugins. A pydantic laid out
    otherwise never asks the stand-in and keeps its own behaviour: this only saves time."""
    if PLUGIN_LOADER in sys.modules:
        return
    stand_in = types.ModuleType(PLUGIN_LOADER, _without_pydantic_plugins.__doc__)
    stand_in.get_plugins = _no_plugins  # type: ignore[attr-defined]
    stand_in.__getattr__ = _real_loader_attribute  # type: ignore[method-assign]
    sys.modules[PLUGIN_LOADER] = stand_in


def _no_plugins(*_: object) -> tuple[()]:
    return ()


def _real_loader_attribute(name: str) -> object:
    """A name the stand-in does not hold: the real loader takes its place, with no plugins. The
    import system's own probes (`__path__`, ...) are answered as for any plain module."""
    if name.startswith("__"):
        raise AttributeError(f"module {PLUGIN_LOADER!r} has no attribute {name!r}")
    del sys.modules[PLUGIN_LOADER]
    loader = importlib.import_module(PLUGIN_LOADER)
    if getattr(loader, "_plugins", {}) is None:
        loader._plugins = {}  # type: ignore[attr-defined]
    return getattr(loader, name)


if __name__ == "__main__":
    raise SystemExit(main())
