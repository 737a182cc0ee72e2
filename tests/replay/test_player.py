"""The player: original pace with idle gaps capped, a speed factor, steps both ways, any projection."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from engine.events import Event, SessionTitle
from engine.gateway.base import GatewayType
from replay.player import Player
from replay.timeline import Timeline, TimelineState
from tests.agent.conftest import FlakyStore, MakeAgent, stored_log
from tests.replay.scenarios import SCENARIOS


def _titles(times: list[float]) -> list[Event]:
    return [
        Event(seq=i, time=t, type="session/title", data=SessionTitle(title=f"t{i}"))
        for i, t in enumerate(times)
    ]


@dataclass
class Titles:
    """A minimal projection: the titles seen so far."""

    seen: list[str] = field(default_factory=list)

    def apply(self, event: Event) -> None:
        assert isinstance(event.data, SessionTitle)
        self.seen.append(event.data.title)

    def snapshot(self) -> tuple[str, ...]:
        return tuple(self.seen)


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.mark.parametrize(
    ("speed", "expected"), [(1.0, [0.5, 2.0, 0.25]), (2.0, [0.25, 1.0, 0.125])]
)
async def test_play_keeps_the_pace_with_idle_gaps_capped(
    speed: float, expected: list[float]
) -> None:
    sleeps = Sleeps()
    player = Player(_titles([10.0, 10.5, 99.0, 99.25]), Titles, sleep=sleeps)
    await player.play(speed)
    assert sleeps.delays == expected
    assert player.state() == ("t0", "t1", "t2", "t3")


async def test_play_until_and_instant_speed() -> None:
    sleeps = Sleeps()
    player = Player(_titles([0.0, 1.0, 2.0]), Titles, sleep=sleeps)
    await player.play(float("inf"), until=2)
    assert (player.state(), sleeps.delays) == (("t0", "t1"), [])
    with pytest.raises(ValueError, match="speed"):
        await player.play(0)


def test_a_plain_projection_steps_back_by_rebuilding() -> None:
    player = Player(_titles([0.0, 1.0, 2.0]), Titles)
    player.seek(3)
    player.step_back()
    assert (player.position, player.seq, player.state()) == (2, 1, ("t0", "t1"))
    player.step_back()
    player.step_back()
    player.step_back()
    assert (player.position, player.state()) == (0, ())
    with pytest.raises(IndexError):
        player.seek(4)


async def test_the_timeline_steps_both_ways_through_its_checkpoints(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await SCENARIOS["subtask"](make_agent)
    log = await stored_log(store, agent.session_id)
    reference = Timeline.of(GatewayType.scripted, log)
    player: Player[TimelineState] = Player(log, lambda: Timeline(GatewayType.scripted, every=4))
    while player.step_forward() is not None:
        assert player.state().context.entries() == reference.at(player.seq).context.entries()
    while player.position > 0:
        player.step_back()
        state = player.state()
        assert state.seq == player.seq
        assert state.context.entries() == reference.at(player.seq).context.entries()
        assert state.areas == reference.at(player.seq).areas
    player.seek(len(log))
    assert player.state().areas == agent.areas
