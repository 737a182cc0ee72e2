"""Every key Trellis binds is pressed through a terminal by some screen's key test
(`tests/tui/keys/test_*_keys.py`, each with its `CHECKS`): a binding added without a step that
presses it and asserts what it does fails here, named."""

from __future__ import annotations

import importlib
import pkgutil

import tests.tui.keys
from tests.tui.keys.checks import Covered, KeyChecks, bound_keys, named


def declared_checks() -> dict[str, KeyChecks]:
    """Each key test module's `CHECKS`, by module name."""
    found: dict[str, KeyChecks] = {}
    for module in pkgutil.iter_modules(tests.tui.keys.__path__, f"{tests.tui.keys.__name__}."):
        if module.name.rpartition(".")[2].startswith("test_"):
            checks = getattr(importlib.import_module(module.name), "CHECKS", None)
            if isinstance(checks, KeyChecks):
                found[module.name] = checks
    return found


def test_every_binding_is_pressed_through_a_terminal() -> None:
    covered: set[Covered] = set()
    for checks in declared_checks().values():
        covered |= checks.covered()
    bound = bound_keys()
    assert not bound - covered, "no terminal key test presses:\n" + "\n".join(
        named(bound - covered)
    )
    assert not covered - bound, "a key test covers a key nothing binds:\n" + "\n".join(
        named(covered - bound)
    )


def test_the_bindings_are_found() -> None:
    """The collection sees the screens, the widgets and the app (a broken walk would find none
    and pass the test above)."""
    owners = {cls.__name__ for cls, _ in bound_keys()}
    assert {"TrellisApp", "MainScreen", "ReplayScreen", "PromptInput", "LongEntry"} <= owners
