"""`Transcript.prepend`: a session projected from its tail, with its earlier turns projected apart and
put in front (a console loading scrollback), reads exactly as the whole log projected at once."""

from __future__ import annotations

import itertools

import pytest

from engine.events import TurnStart
from replay.transcript import transcript_of
from tests.agent.conftest import MakeAgent
from tests.replay.scenarios import SCENARIOS


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_pages_cut_at_turn_starts_read_as_the_whole_log(
    name: str, make_agent: MakeAgent
) -> None:
    agent = await SCENARIOS[name](make_agent)
    events = list(agent.log)
    whole = transcript_of(events).entries
    cuts = [i for i, e in enumerate(events) if isinstance(e.data, TurnStart) and i > 0]
    assert cuts, "every scenario has more than one turn"
    for cut in cuts:
        tail = transcript_of(events[cut:])
        assert tail.first_seq == events[cut].seq
        change = tail.prepend(transcript_of(events[:cut]))
        assert tail.entries == whole
        assert tail.first_seq == 0
        assert list(change.added) == [e.key for e in whole[: len(change.added)]]
    # pages of one turn each, prepended from the end to the start
    bounds = [0, *cuts, len(events)]
    pages = [transcript_of(events[a:b]) for a, b in itertools.pairwise(bounds)]
    built = pages.pop()
    while pages:
        built.prepend(pages.pop())
    assert built.entries == whole


async def test_an_overlapping_page_is_refused(make_agent: MakeAgent) -> None:
    agent = await SCENARIOS["tools"](make_agent)
    events = list(agent.log)
    cut = next(i for i, e in enumerate(events) if isinstance(e.data, TurnStart) and i > 0)
    tail = transcript_of(events[cut:])
    with pytest.raises(ValueError, match="not before"):
        tail.prepend(transcript_of(events[: cut + 1]))
