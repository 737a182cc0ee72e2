"""Built-in Areas and the loader for Areas named by import path in the config."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any, cast

from engine.context.area import ContextAreaImplementation, RestorableArea
from engine.context.areas.notice import NoticeArea
from engine.context.areas.plan import PlanArea, PlanItem
from engine.context.areas.subtask import SUBTASK_DONE, SUBTASK_DONE_TOOL, SubtaskArea
from engine.context.areas.watch import WatchArea
from engine.errors import TrellisError

__all__ = [
    "BUILTIN_KINDS",
    "SUBTASK_DONE",
    "SUBTASK_DONE_TOOL",
    "AreaLoadError",
    "NoticeArea",
    "PlanArea",
    "PlanItem",
    "SubtaskArea",
    "WatchArea",
    "load_area",
    "restorable_kinds",
]

BUILTIN_KINDS: dict[str, type[RestorableArea]] = {
    "notice": NoticeArea,
    "subtask": SubtaskArea,
    "watch": WatchArea,
    "plan": PlanArea,
}
"""The restorable kinds resume knows without configuration."""

_STATES = ("life_state", "flow_state")
_MEMBERS = (*_STATES, "observe", "render", "promote", "gc_prologue")
_PROTOCOL = "engine.context.area.ContextAreaImplementation"


class AreaLoadError(TrellisError, ImportError):
    """An Area named in the config could not be loaded; the message names its import path."""

    def __init__(self, path: str, reason: str) -> None:
        # ImportError.__init__ resets `path`, so it runs first.
        super().__init__(f"cannot load Area {path!r}: {reason}")
        self.path = path
        self.reason = reason


def _resolve(path: str) -> object:
    """The object `package.module:Name` (or `package.module.Name`) names."""
    module_name, sep, attribute = path.partition(":")
    if not sep:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise AreaLoadError(path, "expected 'package.module:Class'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise AreaLoadError(path, f"import of {module_name!r} failed: {exc}") from exc
    factory = getattr(module, attribute, None)
    if factory is None or not callable(factory):
        raise AreaLoadError(path, f"module {module_name!r} has no callable {attribute!r}")
    return factory


def _area_class(path: str) -> type[Any]:
    """The class `path` names, checked against the Area protocol before anything is called.

    A config names a class to construct; anything else (a function such as `os:system`, a class
    without the protocol's members) is refused here, so no callable that is not an Area runs.
    """
    factory = _resolve(path)
    if not isinstance(factory, type):
        raise AreaLoadError(
            path,
            f"not a class ({type(factory).__name__}); an Area is a class implementing {_PROTOCOL}",
        )
    missing = [name for name in _MEMBERS if not _declares(factory, name)]
    if missing:
        raise AreaLoadError(path, f"{factory.__name__} lacks {', '.join(missing)} of {_PROTOCOL}")
    return factory


def _declares(cls: type[Any], name: str) -> bool:
    """A method must be callable on the class; a state may be a property, a class attribute or
    an annotated instance attribute (a dataclass field)."""
    if name in _STATES:
        return hasattr(cls, name) or any(
            name in getattr(base, "__annotations__", {}) for base in cls.__mro__
        )
    return callable(getattr(cls, name, None))


def restorable_kinds(paths: Iterable[str]) -> dict[str, type[RestorableArea]]:
    """The built-in kinds plus each configured Area class that can be restored, by its `kind`.

    Resume rebuilds a configured Area from its recorded state with these; a class without
    `kind` and `restore` is left out (such an Area is reported unrestorable on resume).
    """
    kinds = dict(BUILTIN_KINDS)
    for path in paths:
        factory = _area_class(path)
        kind = getattr(factory, "kind", None)
        if isinstance(kind, str) and hasattr(factory, "restore"):
            kinds[kind] = cast(type[RestorableArea], factory)
    return kinds


def load_area(path: str, args: Mapping[str, Any] | None = None) -> ContextAreaImplementation:
    """Import `package.module:Class` (or `package.module.Class`) and build it with `args`.

    Raises `AreaLoadError` naming `path` when the module or attribute is missing, it is not a
    class implementing the Area protocol (checked before it is called), construction fails, or the
    built object lacks a member of the protocol.
    """
    factory = _area_class(path)
    try:
        area = factory(**dict(args or {}))
    except Exception as exc:
        raise AreaLoadError(
            path, f"{factory.__name__}(...) raised {type(exc).__name__}: {exc}"
        ) from exc
    missing = [name for name in _MEMBERS if not hasattr(area, name)]
    if missing:
        raise AreaLoadError(path, f"{type(area).__name__} lacks {', '.join(missing)}")
    return cast(ContextAreaImplementation, area)
