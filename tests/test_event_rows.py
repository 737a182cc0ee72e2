"""`decode_rows`, the bulk reader a store loads a log with, keeps `decode_row`'s contract: equal
events, unknown and live types refused with their seq, bad data named (issue 11, fast loading)."""

from __future__ import annotations

import pytest

from engine.events import (
    Event,
    EventDecodeError,
    TurnStart,
    UnknownEventTypeError,
    decode_event_json,
    decode_row,
    decode_rows,
    encode_data,
    make_event,
)
from tests.test_events import DURABLE_SAMPLES, LIVE_SAMPLES


def _rows(events: list[Event]) -> list[tuple[int, float, str, str]]:
    return [(e.seq, e.time, e.type, encode_data(e)) for e in events]


def test_every_durable_type_decodes_equal_to_decode_row() -> None:
    events = [make_event(p, seq, 1_700_000_000.5 + seq) for seq, p in enumerate(DURABLE_SAMPLES)]
    decoded = decode_rows(_rows(events))
    assert decoded == events
    assert decoded == [decode_row(*row) for row in _rows(events)]
    # the validating reader of untrusted input, the envelope and all through pydantic
    assert decoded == [decode_event_json(e.model_dump_json()) for e in events]
    for got, want in zip(decoded, events, strict=True):
        assert type(got.data) is type(want.data)
        assert got.model_fields_set == Event.model_construct(**dict(want)).model_fields_set
        assert got.model_dump_json() == want.model_dump_json()


def test_an_unknown_type_is_refused_with_its_seq() -> None:
    rows = [*_rows([make_event(TurnStart(turn=1), 0, 1.0)]), (1, 2.0, "from/future", "{}")]
    with pytest.raises(UnknownEventTypeError, match=r"'from/future' at seq 1"):
        decode_rows(rows)


@pytest.mark.parametrize("payload", LIVE_SAMPLES[:3], ids=lambda p: p.event_type)
def test_a_live_type_is_no_stored_type(payload: object) -> None:
    live_type = type(payload).event_type  # type: ignore[attr-defined]
    with pytest.raises(UnknownEventTypeError, match="at seq 7"):
        decode_rows([(7, 1.0, live_type, "{}")])


def test_bad_data_names_the_type_and_the_seq() -> None:
    with pytest.raises(EventDecodeError, match=r"invalid turn/start event at seq 3"):
        decode_rows([(3, 1.0, "turn/start", '{"turn": "one"}')])
    with pytest.raises(EventDecodeError, match=r"at seq 4"):
        decode_rows([(4, 1.0, "turn/start", "not json")])
