"""Keeping a running turn's widgets out of the cyclic collector's full passes.

A long streamed reply mounts thousands of widgets, each with caches of its own; the collector's
full pass walked all of them about once a second, 30 ms at first and 0.4 s by 100 KB, inside a
frame, and the stream fell seconds behind. While a turn runs, what is alive is frozen as the reply
grows (`gc.freeze`: out of the collector's reach; reference counting still frees all that is not
in a cycle); when the turn ends everything is thawed, so a cycle that died meanwhile (a widget
removed) is reclaimed then and nothing stays frozen past the turn.
"""

from __future__ import annotations

import gc


class TurnCollector:
    """Freezes what is alive while a turn runs (the collector is the process's: so is this)."""

    def __init__(self) -> None:
        self.holding = False

    def hold(self) -> None:
        """A turn runs: what is alive now lives at least as long as it (once per turn)."""
        if not self.holding:
            self.holding = True
            gc.freeze()

    def grown(self) -> None:
        """The turn's widgets grew by a part that stays (a sealed chunk of the reply)."""
        if self.holding:
            gc.freeze()

    def release(self) -> None:
        """The turn ended: everything frozen goes back to the collector."""
        if self.holding:
            self.holding = False
            gc.unfreeze()


turns = TurnCollector()
