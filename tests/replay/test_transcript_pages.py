"""Pages of a log cut at turn starts, each projected apart, read in a row exactly as the whole log
projected at once (what a console paging through a long session relies on)."""

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
        assert transcript_of(events[:cut]).entries + tail.entries == whole
    # pages of one turn each
    bounds = [0, *cuts, len(events)]
    pages = [transcript_of(events[a:b]) for a, b in itertools.pairwise(bounds)]
    assert [entry for page in pages for entry in page.entries] == whole
