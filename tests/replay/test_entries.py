"""`evolve` builds the same value as `dataclasses.replace`, for every kind of entry, and leaves
the entry it copied alone."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from engine.message import Source
from replay.entries import (
    AssistantEntry,
    CompactEntry,
    ContextEntry,
    ToolEntry,
    TranscriptEntry,
    TurnEntry,
    evolve,
)

CASES: list[tuple[TranscriptEntry, dict[str, Any]]] = [
    (TurnEntry(key="turn:1", seq=0, number=1, start=1.0), {"steps": 2, "end": 3.0}),
    (
        ToolEntry(
            key="tool:1.1.c",
            seq=4,
            turn=1,
            step=1,
            call_id="c",
            name="ls",
            arguments={},
            status="running",
        ),
        {"status": "done", "result": "a\nb", "is_error": False},
    ),
    (AssistantEntry(key="assistant:1.1", seq=3, turn=1, step=1, streaming=True), {"content": "hi"}),
    (ContextEntry(key="context:2", seq=2, time=1.0, content="x", source=Source("hook")), {}),
    (CompactEntry(key="compact:9", seq=9, groups=2, earliest=0), {"done": True, "carried": (4,)}),
]


@pytest.mark.parametrize(("entry", "changes"), CASES)
def test_evolve_is_replace(entry: TranscriptEntry, changes: dict[str, Any]) -> None:
    before = dataclasses.replace(entry)
    evolved = evolve(entry, **changes)
    assert evolved == dataclasses.replace(entry, **changes)
    assert type(evolved) is type(entry)
    assert entry == before
    with pytest.raises(dataclasses.FrozenInstanceError):
        evolved.seq = 99  # type: ignore[misc]


def test_evolve_refuses_a_field_the_entry_lacks() -> None:
    entry = TurnEntry(key="turn:1", seq=0, number=1, start=1.0)
    with pytest.raises(TypeError, match=r"TurnEntry has no field \['stepz'\]"):
        evolve(entry, stepz=1)


def test_an_entry_is_built_with_its_defaults_and_refuses_missing_or_unknown_fields() -> None:
    entry = TurnEntry(key="turn:1", seq=0, number=1, start=1.0)
    assert entry == dataclasses.replace(entry)
    assert (entry.status, entry.steps, entry.end) == ("running", 0, None)
    assert repr(entry).startswith("TurnEntry(key='turn:1', seq=0, number=1, status='running'")
    with pytest.raises(TypeError, match=r"TurnEntry.__init__\(\) missing .* argument: 'start'"):
        TurnEntry(key="turn:1", seq=0, number=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"TurnEntry.__init__\(\) got an unexpected .* 'stepz'"):
        TurnEntry(key="turn:1", seq=0, number=1, start=1.0, stepz=2)  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.steps = 3  # type: ignore[misc]
