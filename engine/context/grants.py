"""Grants and the grant-keyed environment snapshots (context-orchestration, "Grant-aware rebinding").

A grant is the binding of the session to a model entry; its epoch counts `model/bind` events. The
environment block is keyed by (session, model entry, grant epoch): requests within one grant share
a byte-identical block, and every fresh grant gets a fresh one even for the same model entry.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.context.floor import Block
from engine.events import ModelBind


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """The model entry a turn runs with, and the epoch of the binding that chose it."""

    model: str
    epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GrantState:
    """A tracker's whole state at one point, to take up again later (`GrantTracker.restored`)."""

    latest: Grant | None
    active: Grant | None
    in_turn: bool
    rewound_epoch: int


@dataclass(slots=True)
class GrantTracker:
    """Counts bindings; a binding made during a turn is staged and takes effect at the next turn."""

    _latest: Grant | None = None
    _active: Grant | None = None
    _in_turn: bool = False
    _rewound_epoch: int = 0  # the highest epoch a rewind took out of the history

    @property
    def epoch(self) -> int:
        """The number of `model/bind` events so far (a rewound one counts: epochs are never
        reused, as an environment snapshot is keyed by its epoch)."""
        latest = 0 if self._latest is None else self._latest.epoch
        return max(latest, self._rewound_epoch)

    @property
    def active(self) -> Grant | None:
        """The grant the running (or next) turn uses."""
        return self._active

    @property
    def staged(self) -> Grant | None:
        """A binding made during the running turn, waiting for the next turn start."""
        return self._latest if self._latest != self._active else None

    def bind(self, model: str) -> ModelBind:
        """Bind the session to `model`; the returned payload is the `model/bind` event to append."""
        grant = Grant(model=model, epoch=self.epoch + 1)
        self._latest = grant
        if not self._in_turn:
            self._active = grant
        return ModelBind(model=grant.model, grant_epoch=grant.epoch)

    def apply(self, payload: ModelBind) -> None:
        """Follow a recorded `model/bind` (resume, replay): the stored epoch is authoritative."""
        self._latest = Grant(model=payload.model, epoch=payload.grant_epoch)
        if not self._in_turn:
            self._active = self._latest

    def skip(self, payload: ModelBind) -> None:
        """A `model/bind` a rewind took out of the history: only its epoch stays taken."""
        self._rewound_epoch = max(self._rewound_epoch, payload.grant_epoch)

    def begin_turn(self) -> Grant | None:
        """Open a turn: a staged binding takes effect now, and no binding changes it until the end."""
        self._active = self._latest
        self._in_turn = True
        return self._active

    def end_turn(self) -> None:
        self._in_turn = False

    def snapshot(self) -> GrantState:
        """The state now; the tracker goes on independently of it."""
        return GrantState(
            latest=self._latest,
            active=self._active,
            in_turn=self._in_turn,
            rewound_epoch=self._rewound_epoch,
        )

    @classmethod
    def restored(cls, state: GrantState) -> GrantTracker:
        """A tracker that goes on from `state` (a seek to a checkpoint)."""
        return cls(state.latest, state.active, state.in_turn, state.rewound_epoch)


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvironmentKey:
    """What an environment snapshot is shared by: exactly the same key shares the same block."""

    session_id: str
    model_entry: str
    grant_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvironmentLease:
    """One turn's reference to a snapshot; releasing it twice, or late, harms no other lease."""

    key: EnvironmentKey
    lease_id: int
    block: Block


@dataclass(slots=True)
class _Snapshot:
    """One environment block and the grant epochs that lease it."""

    block: Block
    leases: set[int] = field(default_factory=set)


@dataclass(slots=True)
class EnvironmentSnapshots:
    """Environment blocks shared by key while any turn references them, released after the last.

    Each lease has its own id, so a release removes only itself: a late or repeated release of a
    lease from an earlier snapshot cannot evict a newer snapshot of the same key, and a release for
    an older key never touches a newer key.
    """

    _snapshots: dict[EnvironmentKey, _Snapshot] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    def acquire(self, key: EnvironmentKey, build: Callable[[], Block]) -> EnvironmentLease:
        """A lease on the snapshot for `key`; `build` runs only when no live snapshot has the key."""
        snapshot = self._snapshots.get(key)
        if snapshot is None:
            snapshot = _Snapshot(block=build())
            self._snapshots[key] = snapshot
        lease_id = next(self._ids)
        snapshot.leases.add(lease_id)
        return EnvironmentLease(key=key, lease_id=lease_id, block=snapshot.block)

    def release(self, lease: EnvironmentLease) -> None:
        """Drop one reference; the snapshot goes with its last one. Unknown leases are ignored."""
        snapshot = self._snapshots.get(lease.key)
        if snapshot is None or lease.lease_id not in snapshot.leases:
            return
        snapshot.leases.discard(lease.lease_id)
        if not snapshot.leases:
            del self._snapshots[lease.key]

    @property
    def live(self) -> int:
        """How many snapshots are held (for tests and the side panel)."""
        return len(self._snapshots)

    def __contains__(self, key: object) -> bool:
        return key in self._snapshots
