"""`HeldLog`: the log by seq, of which only the held tail can be read at once."""

from __future__ import annotations

import pytest

from engine.events import UserMessage, make_event
from engine.held_log import HeldLog, NotHeldError

TAIL = [make_event(UserMessage(content=str(seq)), seq, float(seq)) for seq in range(5, 9)]


def test_a_whole_log_reads_like_the_list_it_holds() -> None:
    log = HeldLog(TAIL[:0], 0)
    assert (len(log), list(log), log[:]) == (0, [], [])
    events = [make_event(UserMessage(content="a"), 0, 0.0)]
    assert list(HeldLog(events, 0)) == events


def test_a_tail_is_indexed_by_seq_and_refuses_what_it_does_not_hold() -> None:
    log = HeldLog(TAIL, 5)
    assert len(log) == 9
    assert (log[5].seq, log[8].seq, log[-1].seq, log[-4].seq) == (5, 8, 8, 5)
    assert [e.seq for e in log[6:]] == [6, 7, 8]
    assert [e.seq for e in log[5:7]] == [5, 6]
    assert log[9:] == []
    with pytest.raises(IndexError):
        log[9]
    for read in (lambda: log[4], lambda: log[-5], lambda: log[4:], lambda: list(log)):
        with pytest.raises(NotHeldError, match="before seq 5"):
            read()
    with pytest.raises(ValueError, match="step"):
        log[5::2]
