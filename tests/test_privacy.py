"""Privacy labels: the class order, and a join that never lowers what material may reveal."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from engine.privacy import PrivacyClass, PrivatizationLabel, join_all

names = st.frozensets(st.sampled_from(["a", "b", "c", "d"]), max_size=3)
labels = st.builds(
    PrivatizationLabel,
    cls=st.sampled_from(list(PrivacyClass)),
    weight=st.integers(0, 5),
    categories=names,
    subjects=names,
    parents=names,
)


def test_classes_are_ordered_public_to_restricted() -> None:
    assert (
        PrivacyClass.public < PrivacyClass.internal < PrivacyClass.private < PrivacyClass.restricted
    )
    assert max(PrivacyClass.internal, PrivacyClass.private) is PrivacyClass.private


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("restricted", PrivacyClass.restricted),
        (0, PrivacyClass.public),
        (PrivacyClass.private, PrivacyClass.private),
    ],
)
def test_parse_accepts_names_numbers_and_classes(
    value: str | int | PrivacyClass, expected: PrivacyClass
) -> None:
    assert PrivacyClass.parse(value) is expected


def test_parse_refuses_an_unknown_name_and_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown privacy class 'secret'.*public, internal"):
        PrivacyClass.parse("secret")


def test_default_label_is_internal() -> None:
    """Direct user input and workspace files are internal unless something says otherwise."""
    assert PrivatizationLabel().cls is PrivacyClass.internal


def test_join_keeps_the_highest_class_and_weight_and_unions_the_sets() -> None:
    a = PrivatizationLabel(
        cls=PrivacyClass.private, weight=1, categories=frozenset({"pii"}), parents=frozenset({"x"})
    )
    b = PrivatizationLabel(
        cls=PrivacyClass.internal, weight=4, subjects=frozenset({"bob"}), parents=frozenset({"y"})
    )
    joined = a.join(b)
    assert joined == PrivatizationLabel(
        cls=PrivacyClass.private,
        weight=4,
        categories=frozenset({"pii"}),
        subjects=frozenset({"bob"}),
        parents=frozenset({"x", "y"}),
    )


@settings(max_examples=50, deadline=None)
@given(labels, labels, labels)
def test_join_is_a_semilattice_that_never_lowers(
    a: PrivatizationLabel, b: PrivatizationLabel, c: PrivatizationLabel
) -> None:
    assert a.join(b) == b.join(a)
    assert a.join(b).join(c) == a.join(b.join(c))
    assert a.join(a) == a
    joined = a.join(b)
    assert joined.cls >= a.cls
    assert joined.weight >= a.weight
    assert a.categories <= joined.categories
    assert a.subjects <= joined.subjects
    assert a.parents <= joined.parents


@settings(max_examples=50, deadline=None)
@given(st.lists(labels, max_size=4))
def test_join_all_is_the_fold_of_join(items: list[PrivatizationLabel]) -> None:
    result = join_all(items)
    for item in items:
        assert result.join(item) == result
    assert result.cls == max((i.cls for i in items), default=PrivacyClass.public)


def test_join_of_nothing_is_public() -> None:
    assert join_all([]).cls is PrivacyClass.public


def test_of_names_the_parents() -> None:
    label = PrivatizationLabel.of(PrivacyClass.restricted, "file:.env", "seq:3")
    assert label.cls is PrivacyClass.restricted
    assert label.parents == frozenset({"file:.env", "seq:3"})


@settings(max_examples=50, deadline=None)
@given(labels)
def test_json_round_trip_is_lossless(label: PrivatizationLabel) -> None:
    assert PrivatizationLabel.model_validate_json(label.model_dump_json()) == label


def test_json_form_is_readable_and_stable() -> None:
    label = PrivatizationLabel(cls=PrivacyClass.private, parents=frozenset({"z", "a"}))
    dumped = json.loads(label.model_dump_json())
    assert dumped["cls"] == "private"
    assert dumped["parents"] == ["a", "z"]  # sorted, so equal labels serialize equally


@pytest.mark.parametrize("value", ["top", 7, 1.5, None])
def test_invalid_class_is_refused(value: object) -> None:
    with pytest.raises(ValidationError):
        PrivatizationLabel.model_validate({"cls": value})


def test_labels_are_immutable() -> None:
    label = PrivatizationLabel()
    with pytest.raises(ValidationError):
        label.cls = PrivacyClass.public  # type: ignore[misc]
