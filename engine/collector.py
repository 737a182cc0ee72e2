"""Pausing Python's cyclic garbage collector around bulk decoding, and around a command's imports.

Decoding a long log allocates hundreds of thousands of objects and no cycles; every few hundred
allocations the collector would walk the young objects, and every so often all of them, which
made loading 100,000 events about three times slower (issue 11). Reference counting still frees
everything as usual while the collector is paused.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
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
    with collector_paused():
        yield
        gc.freeze()
