"""Privacy labels: what a piece of material may reveal, joined as material flows together."""

from __future__ import annotations

from enum import IntEnum

from pydantic import BaseModel, ConfigDict, field_serializer, field_validator


class PrivacyClass(IntEnum):
    """Ordered so that `max()` is the join: public < internal < private < restricted."""

    public = 0
    internal = 1
    private = 2
    restricted = 3

    @classmethod
    def parse(cls, value: str | int | PrivacyClass) -> PrivacyClass:
        if isinstance(value, PrivacyClass):
            return value
        if isinstance(value, int):
            return cls(value)
        try:
            return cls[value]
        except KeyError:
            names = ", ".join(c.name for c in cls)
            raise ValueError(f"unknown privacy class {value!r} (expected one of {names})") from None


class PrivatizationLabel(BaseModel):
    """A label never lowers when joined: highest class and weight, union of the sets."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use (start time)

    cls: PrivacyClass = PrivacyClass.internal
    weight: int = 0
    categories: frozenset[str] = frozenset()
    subjects: frozenset[str] = frozenset()
    parents: frozenset[str] = frozenset()

    @field_validator("cls", mode="before")
    @classmethod
    def _parse_cls(cls, value: object) -> PrivacyClass:
        if isinstance(value, str | int):
            return PrivacyClass.parse(value)
        raise ValueError(f"invalid privacy class {value!r}")

    @field_serializer("cls")
    def _dump_cls(self, value: PrivacyClass) -> str:
        return value.name

    @field_serializer("categories", "subjects", "parents")
    def _dump_set(self, value: frozenset[str]) -> list[str]:
        return sorted(value)

    def join(self, other: PrivatizationLabel) -> PrivatizationLabel:
        return PrivatizationLabel(
            cls=max(self.cls, other.cls),
            weight=max(self.weight, other.weight),
            categories=self.categories | other.categories,
            subjects=self.subjects | other.subjects,
            parents=self.parents | other.parents,
        )

    @classmethod
    def of(cls, privacy_class: PrivacyClass, *parents: str) -> PrivatizationLabel:
        return cls(cls=privacy_class, parents=frozenset(parents))


def join_all(labels: list[PrivatizationLabel]) -> PrivatizationLabel:
    """The join of no labels is public: nothing was read."""
    result = PrivatizationLabel(cls=PrivacyClass.public)
    for label in labels:
        result = result.join(label)
    return result
