"""Stop signals handled on the event loop, for as long as a command runs.

A command asked to stop from outside (a closed terminal, a service manager, Ctrl-C for a server)
ends its work cleanly (turns cancelled and stored, leases given back) instead of dying with a turn
open. Windows event loops take no signal handlers (and have no SIGHUP): there Ctrl-C stays the way
out, as `KeyboardInterrupt`.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager


@contextmanager
def on_stop_signals(names: Sequence[str], callback: Callable[[], object]) -> Iterator[None]:
    """Within the block, each signal named (`"SIGTERM"`, ...) calls `callback` on the running
    loop; the handlers are removed when the block ends."""
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for name in () if sys.platform == "win32" else names:
        signum: signal.Signals = getattr(signal, name)
        loop.add_signal_handler(signum, callback)
        handled.append(signum)
    try:
        yield
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
