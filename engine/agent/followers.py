"""What rebuilds a session's working state from its log, rewinds honoured: one path for a
resume and a live rewind.

The assembler (grants, pins, the floor and tool logs), the permission broker (mode and rules)
and the Context rebuilder (the Context, its Areas and cursor) follow the log event by event. An
event a rewind took out of the history (`engine.rewind_intervals`) reaches each through its
`follow_rewound`/`skip`, which keep only what is unique over the whole log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.agent.assembler import Assembler
from engine.events import Event
from engine.gateway.base import GatewayType
from engine.gc_policy import gc_paused
from engine.rewind_intervals import RewoundIntervals
from engine.session import Session
from engine.tools.permission import PermissionBroker

if TYPE_CHECKING:
    from engine.context import ContextRebuilder


@dataclass(slots=True)
class Followers:
    """One session's state builders, fed the same events in log order."""

    assembler: Assembler
    permission: PermissionBroker
    rebuilder: ContextRebuilder

    def follow(self, event: Event) -> None:
        """An event of the history."""
        data = event.data
        self.assembler.follow(data)
        self.permission.follow(data)
        self.rebuilder.apply(event)

    def skip(self, event: Event) -> None:
        """An event a rewind took out of the history."""
        data = event.data
        self.assembler.follow_rewound(data)
        self.permission.follow_rewound(data)
        self.rebuilder.skip(event)

    @classmethod
    def starting(
        cls, assembler: Assembler, permission: PermissionBroker, gateway_type: GatewayType
    ) -> Followers:
        """Builders like `assembler` and `permission` (same session, configuration and
        responder), and a rebuilder in `gateway_type`'s format, that followed nothing."""
        from engine.context import ContextRebuilder

        return cls(assembler.fresh(), permission.fresh(), ContextRebuilder(gateway_type))


async def rebuild_state(session: Session, rewound: RewoundIntervals, start: Followers) -> Followers:
    """`start` (fresh builders) fed the session's whole log by range, each event followed or
    skipped as `rewound` says. `rewound` must know every rewind of the log."""
    follow, skip = start.follow, start.skip
    with gc_paused():  # bulk work that makes no cycles (engine/gc_policy.py)
        async for chunk in session.chunks():
            for event in chunk:
                if event.seq in rewound:
                    skip(event)
                else:
                    follow(event)
    return start
