"""Grants and grant-keyed environment snapshots (context-orchestration, "Grant-aware rebinding")."""

from __future__ import annotations

from functools import partial

from engine.context.floor import Block, environment_block
from engine.context.grants import EnvironmentKey, EnvironmentSnapshots, Grant, GrantTracker
from engine.events import ModelBind


class Builds:
    """Counts how often a snapshot was built: sharing means building once per key."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, epoch: int) -> Block:
        self.count += 1
        return environment_block(
            cwd="/w", platform="linux", model="local", tools=["read_file"], grant_epoch=epoch
        )


def key(epoch: int, model: str = "local") -> EnvironmentKey:
    return EnvironmentKey(session_id="s1", model_entry=model, grant_epoch=epoch)


def test_the_grant_epoch_counts_bindings() -> None:
    tracker = GrantTracker()
    assert tracker.epoch == 0
    assert tracker.bind("local") == ModelBind(model="local", grant_epoch=1)
    assert tracker.bind("local") == ModelBind(model="local", grant_epoch=2)
    assert tracker.active == Grant(model="local", epoch=2)


def test_a_binding_during_a_turn_takes_effect_at_the_next_turn() -> None:
    tracker = GrantTracker()
    tracker.bind("local")
    assert tracker.begin_turn() == Grant(model="local", epoch=1)
    tracker.bind("remote")
    assert tracker.active == Grant(model="local", epoch=1)
    assert tracker.staged == Grant(model="remote", epoch=2)
    tracker.end_turn()
    assert tracker.begin_turn() == Grant(model="remote", epoch=2)
    assert tracker.staged is None


def test_recorded_bindings_are_followed_on_resume() -> None:
    tracker = GrantTracker()
    tracker.apply(ModelBind(model="local", grant_epoch=1))
    tracker.apply(ModelBind(model="remote", grant_epoch=2))
    assert tracker.active == Grant(model="remote", epoch=2)
    assert tracker.bind("local").grant_epoch == 3


def test_the_environment_block_is_shared_within_a_grant_and_renewed_on_a_new_one() -> None:
    snapshots = EnvironmentSnapshots()
    builds = Builds()
    first = snapshots.acquire(key(1), lambda: builds(1))
    second = snapshots.acquire(key(1), lambda: builds(1))
    assert second.block is first.block
    assert builds.count == 1
    renewed = snapshots.acquire(key(2), lambda: builds(2))  # same model entry, fresh grant
    assert builds.count == 2
    assert renewed.block != first.block
    assert "grant epoch: 2" in renewed.block.text
    assert snapshots.live == 2


def test_a_snapshot_is_released_after_its_last_reference() -> None:
    snapshots = EnvironmentSnapshots()
    builds = Builds()
    one = snapshots.acquire(key(1), lambda: builds(1))
    two = snapshots.acquire(key(1), lambda: builds(1))
    snapshots.release(one)
    assert key(1) in snapshots
    snapshots.release(two)
    assert key(1) not in snapshots
    assert snapshots.live == 0


def test_a_late_release_cannot_evict_a_newer_snapshot() -> None:
    snapshots = EnvironmentSnapshots()
    builds = Builds()
    old = snapshots.acquire(key(1), lambda: builds(1))
    snapshots.release(old)
    newer = snapshots.acquire(key(1), lambda: builds(1))  # rebuilt after eviction
    snapshots.release(old)  # late duplicate release of the evicted generation
    assert key(1) in snapshots
    other = snapshots.acquire(key(2), lambda: builds(2))
    snapshots.release(newer)
    snapshots.release(newer)
    assert key(2) in snapshots
    assert snapshots.live == 1
    snapshots.release(other)
    assert snapshots.live == 0


def test_a_thousand_bindings_leave_one_live_snapshot() -> None:
    tracker = GrantTracker()
    snapshots = EnvironmentSnapshots()
    builds = Builds()
    lease = None
    for turn in range(1_000):
        tracker.bind("local" if turn % 2 else "remote")
        grant = tracker.begin_turn()
        assert grant is not None
        current = snapshots.acquire(
            EnvironmentKey(session_id="s1", model_entry=grant.model, grant_epoch=grant.epoch),
            partial(builds, grant.epoch),
        )
        if lease is not None:
            snapshots.release(lease)  # the previous turn settled
        lease = current
        tracker.end_turn()
    assert snapshots.live == 1
    assert builds.count == 1_000
    assert tracker.epoch == 1_000


def test_a_restored_tracker_goes_on_from_the_snapshot_independently() -> None:
    tracker = GrantTracker()
    tracker.bind("remote")
    tracker.begin_turn()
    tracker.bind("local")  # staged during the turn
    tracker.skip(ModelBind(model="gone", grant_epoch=7))
    state = tracker.snapshot()
    tracker.end_turn()
    tracker.begin_turn()  # the original moves on; the snapshot does not
    restored = GrantTracker.restored(state)
    assert restored.active == Grant(model="remote", epoch=1)
    assert restored.staged == Grant(model="local", epoch=2)
    assert restored.epoch == 7  # the rewound epoch stays taken
    assert restored.bind("other").grant_epoch == 8
    assert restored.staged == Grant(model="other", epoch=8)  # still in the turn: staged
    assert tracker.active == Grant(model="local", epoch=2)
