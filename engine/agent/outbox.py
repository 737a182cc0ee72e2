"""Staged model input during a turn: injected and hook contexts, and steering, drained whole.

spec (context-injection): the outbox is drained at safe boundaries only, before each model request and
after a complete batch of tool results, FIFO, each context its own sourced `user/message`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.message import AdditionalContext
from engine.os_text import storable_os_text


@dataclass(frozen=True, slots=True)
class Steering:
    """Direct user words delivered into the running turn."""

    text: str

    def __post_init__(self) -> None:
        # like a prompt: undecodable OS bytes are escaped, never a reason to lose the words
        object.__setattr__(self, "text", storable_os_text(self.text))


OutboxItem = AdditionalContext | Steering


class Outbox:
    """FIFO of staged items; `on_change` lets the loop publish `outbox/changed`."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._items: list[OutboxItem] = []
        self._on_change = on_change

    def __len__(self) -> int:
        return len(self._items)

    @property
    def items(self) -> tuple[OutboxItem, ...]:
        return tuple(self._items)

    @property
    def contexts(self) -> tuple[AdditionalContext, ...]:
        return tuple(i for i in self._items if isinstance(i, AdditionalContext))

    @property
    def steering(self) -> tuple[Steering, ...]:
        return tuple(i for i in self._items if isinstance(i, Steering))

    def stage(self, item: OutboxItem) -> None:
        self._items.append(item)
        self._changed()

    def drain(self) -> list[OutboxItem]:
        """Take everything, in the order it was staged."""
        items, self._items = self._items, []
        if items:
            self._changed()
        return items

    def take_contexts(self) -> list[AdditionalContext]:
        """Remove and return the contexts only, leaving steering staged."""
        contexts = [i for i in self._items if isinstance(i, AdditionalContext)]
        if contexts:
            self._items = [i for i in self._items if isinstance(i, Steering)]
            self._changed()
        return contexts

    def take_steering(self) -> list[Steering]:
        steering = [i for i in self._items if isinstance(i, Steering)]
        if steering:
            self._items = [i for i in self._items if isinstance(i, AdditionalContext)]
            self._changed()
        return steering

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()
