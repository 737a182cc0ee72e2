"""Counts as people read them."""

from __future__ import annotations

from engine.counts import counted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert counted(1, "turn") == "1 turn"
    assert [counted(n, "event") for n in (0, 2, 1_000)] == ["0 events", "2 events", "1000 events"]


def test_a_noun_with_its_own_plural() -> None:
    assert [counted(n, "entry", "entries") for n in (1, 3)] == ["1 entry", "3 entries"]


def test_a_width_lines_the_counts_up() -> None:
    listed = [counted(n, "turn", width=4) for n in (1, 12, 345)]
    assert listed == ["   1 turn ", "  12 turns", " 345 turns"]
    assert len({len(line) for line in listed}) == 1
    entries = [counted(n, "entry", "entries", width=2) for n in (1, 10)]
    assert entries == [" 1 entry  ", "10 entries"]
