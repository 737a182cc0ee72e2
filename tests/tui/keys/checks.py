"""Every key Trellis binds, pressed as a terminal sends it on the real `trellis`, with what it must
visibly do.

A screen's test module holds `CHECKS`, a `KeyChecks`: its steps in the order its one terminal
process runs them (a dialog that shows once per process, the trust dialog, runs each step in a
process of its own). A step names the keys it covers (`@CHECKS.step(ReplayScreen, "home", "end")`),
presses them through the `Terminal` and waits until the screen shows their effect; a step that
never presses a key it names fails. `test_every_binding_is_pressed` gathers every key the
classes under `app.tui` bind (`bound_keys`) and fails naming each one no module's `CHECKS` covers:
a new binding comes with its step, and a new screen with its module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode

import app.tui
from tests.terminal import Terminal

Covered = tuple[type[DOMNode], str]
"""A class and a key it binds, by the key's Textual name (`right_square_bracket`, `ctrl+r`)."""
Run = Callable[[Terminal], None]


@dataclass(slots=True)
class Step:
    """Presses `covers`' keys on the terminal and asserts what they do (its docstring says what)."""

    run: Run
    covers: list[Covered] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.run.__name__


class KeyChecks:
    """The steps of one screen's terminal test, in the order they run."""

    def __init__(self) -> None:
        self.steps: dict[Run, Step] = {}

    def step(self, owner: type[DOMNode], *keys: str) -> Callable[[Run], Run]:
        """Register the decorated function as a step covering `owner`'s `keys` (stack the
        decorator for keys of several classes: the step runs once, where it was first
        registered)."""

        def register(run: Run) -> Run:
            step = self.steps.setdefault(run, Step(run))
            step.covers += [(owner, key) for key in keys]
            return run

        return register

    def covered(self) -> set[Covered]:
        return {pair for step in self.steps.values() for pair in step.covers}

    def run(self, terminal: Terminal) -> None:
        """Every step, in order, in one process."""
        for step in self.steps.values():
            run_step(step, terminal)


def run_step(step: Step, terminal: Terminal) -> None:
    """`step` on `terminal`; a failure names the step (the screen is in the message), and so
    does a key it covers but never pressed."""
    before = len(terminal.pressed)
    try:
        step.run(terminal)
    except AssertionError as failed:
        raise AssertionError(f"step {step.name}: {failed}") from None
    pressed = set(terminal.pressed[before:])
    missing = sorted(key for _, key in step.covers if key not in pressed)
    assert not missing, f"step {step.name} covers {missing} but never pressed them"


def trellis_classes() -> Iterator[type[DOMNode]]:
    """Every screen, widget and app class defined under `app.tui` (its modules imported)."""
    for module in pkgutil.walk_packages(app.tui.__path__, f"{app.tui.__name__}."):
        importlib.import_module(module.name)
    seen: set[type[DOMNode]] = set()
    pending: list[type[DOMNode]] = [DOMNode]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                pending.append(sub)
    yield from sorted(
        (cls for cls in seen if cls.__module__.startswith(f"{app.tui.__name__}.")),
        key=lambda cls: cls.__qualname__,
    )


def bound_keys() -> set[Covered]:
    """Each key a Trellis class binds itself: its `BINDINGS` (not those it inherits), an app's
    command palette key, and the keys a widget handles in its key handler and lists for the help
    screen in its own `KEYS` (the prompt's)."""
    bound: set[Covered] = set()
    for cls in trellis_classes():
        for binding in Binding.make_bindings(cls.__dict__.get("BINDINGS", ())):
            bound.update((cls, key.strip()) for key in binding.key.split(","))
        if issubclass(cls, App) and cls.ENABLE_COMMAND_PALETTE:
            bound.add((cls, cls.COMMAND_PALETTE_BINDING))
        for keys, _description in cls.__dict__.get("KEYS", ()):
            bound.update((cls, key) for key in keys.split(","))
    return bound


def named(pairs: set[Covered]) -> list[str]:
    return sorted(f"{cls.__module__}.{cls.__qualname__}: {key}" for cls, key in pairs)
