"""Pausing Python's cyclic garbage collector around bulk decoding.

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
