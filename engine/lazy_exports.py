"""Package names loaded on first use (PEP 562), so importing one module of a package does not
import all of its siblings: start time is part of the command line's interface."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: each name in `homes` is imported from the module it maps
    to when first asked for, then kept in the package; any other name is an `AttributeError`.

    The package also imports the names under `TYPE_CHECKING`, so type checkers see them."""
    namespace = importlib.import_module(package).__dict__

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return load
