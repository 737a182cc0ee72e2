"""The console uses Textual through its public API only, so an upgrade cannot silently change what
it relies on: no import from a private module (`textual.widgets._markdown`), no private method or
attribute a Textual class defines (`Markdown._build_from_source`, `Widget._on_mount`)."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path

import textual

REPO = Path(__file__).resolve().parents[2]
ALLOWED = frozenset({"_anchor_released"})
"""Read, and only read, for want of a public form: whether the user released a view's anchor
(`Widget.is_anchored` says only that it has one). A rename fails loudly (`AttributeError`); the
console's tests of following the end cover what it means."""


def sources(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (REPO / folder).rglob("*.py"))


def private_textual_imports(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "textual" and any(part.startswith("_") for part in parts):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} imports {module}")
    return found


def test_nothing_imports_a_private_textual_module() -> None:
    found = [line for path in sources("app", "tests") for line in private_textual_imports(path)]
    assert found == []


def textual_private_names() -> dict[str, set[str]]:
    """By class name, the private names each Textual class the console subclasses or names
    defines: methods, properties and class attributes, and the attributes it sets on `self`
    but `ALLOWED`."""
    names: dict[str, set[str]] = {}
    for path in sources("app"):
        for value in vars(module_of(path)).values():
            if not inspect.isclass(value):
                continue
            for cls in value.__mro__:
                if cls.__module__.split(".")[0] == textual.__name__ and cls.__name__ not in names:
                    names[cls.__name__] = (
                        {name for name in vars(cls) if name.startswith("_") and not dunder(name)}
                        | set_on_self(cls)
                    ) - ALLOWED
    return names


def dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def set_on_self(cls: type) -> set[str]:
    """The private attributes `cls`'s own code assigns on `self`."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return set()
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and node.attr.startswith("_")
        and not dunder(node.attr)
    }


def module_of(path: Path) -> object:
    return importlib.import_module(".".join(path.relative_to(REPO).with_suffix("").parts))


def test_no_private_member_of_a_textual_class_is_used() -> None:
    """In a class of the console built on a Textual class: `self._x` where that class defines or
    sets `_x`, or a `def _x` that overrides one; anywhere: `TextualClass._x`."""
    private = textual_private_names()
    found: list[str] = []
    for path in sources("app"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = module_of(path)
        where = path.relative_to(REPO)
        for cls_node in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
            cls = getattr(module, cls_node.name, None)
            mro = cls.__mro__ if inspect.isclass(cls) else ()
            bases = [c for c in mro if c.__module__.split(".")[0] == textual.__name__]
            inherited = set().union(*(private.get(base.__name__, set()) for base in bases))
            for node in ast.walk(cls_node):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                    and node.attr in inherited
                ):
                    found.append(f"{where}:{node.lineno} self.{node.attr}")
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    node.name in inherited
                ):
                    found.append(f"{where}:{node.lineno} def {node.name}")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.attr in private.get(node.value.id, set())
            ):
                found.append(f"{where}:{node.lineno} {node.value.id}.{node.attr}")
    assert found == []
