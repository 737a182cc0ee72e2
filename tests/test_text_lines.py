"""`first_line`: the one short form of long text the console, the rewind report and the panels use."""

from __future__ import annotations

from engine.text_lines import first_line


def test_the_first_line_that_is_not_blank_stripped() -> None:
    assert first_line("\n\n   fix the tests  \nthen lint", 40) == "fix the tests"
    assert first_line("", 40) == ""
    assert first_line(" \n\t\n", 40) == ""


def test_a_long_line_is_cut_with_an_ellipsis_within_the_width() -> None:
    cut = first_line("x" * 50, 10)
    assert cut == "x" * 9 + "…"
    assert len(cut) == 10


def test_more_marks_text_that_follows_an_uncut_line() -> None:
    assert first_line("fix the tests\nthen lint", 40, more=True) == "fix the tests …"
    assert first_line("fix the tests\n\n  \n", 40, more=True) == "fix the tests"
    assert first_line("x" * 50 + "\nmore", 10, more=True) == "x" * 9 + "…"
