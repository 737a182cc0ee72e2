"""Python's cyclic garbage collector, the process's policy for it in one place: paused around bulk
decoding and a command's imports, frozen at exit, and frozen while a console turn runs.

Decoding a long log allocates hundreds of thousands of objects and no cycles; every few hundred
allocations the collector would walk the young objects, and every so often all of them, which
made loading 100,000 events about three times slower (issue 11). Reference counting still frees
everything as usual while the collector is paused.
"""

from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block; it is enabled again after the last of several
    overlapping blocks (in any thread) ends, and only if it was enabled before the first began."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


@contextmanager
def importing() -> Iterator[None]:
    """For a block of imports: the collector is paused for it, and what is alive after it is
    frozen (`gc.freeze`: out of the collector's reach; reference counting still frees it).

    Imports allocate tens of thousands of objects that live as long as the process; the collector
    walked them over and over while `trellis run -p` started, about 2.5% of its instructions (issue
    10). They are frozen before the collector is enabled again: the first allocation after it
    would otherwise start a collection that walks every one of them.
    """
    with gc_paused():
        yield
        gc.freeze()


def freeze_at_exit() -> None:
    """At exit what is still alive is the modules' and the command's, and the OS takes it back:
    frozen then, the interpreter's collections during shutdown skip it (reference counting still
    frees it)."""
    atexit.register(gc.freeze)


class TurnFreeze:
    """Keeps a running console turn's widgets out of the collector's full passes.

    A long streamed reply mounts thousands of widgets, each with caches of its own; the full pass
    walked all of them inside a frame and the stream fell behind. While a turn runs, what is alive
    is frozen as the reply grows; when the turn ends everything is thawed, so a cycle that died
    meanwhile (a widget removed) is reclaimed then and nothing stays frozen past the turn. The
    collector has no partial thaw: what `importing` froze at start-up is thawed with it, and the
    next turn's `hold` freezes it again with the rest.
    """

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


turn_freeze = TurnFreeze()
"""The process's one: it has one collector, held by the console's main screen with its turns and
told by a reply's entries when they grew."""
