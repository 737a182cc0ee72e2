"""Errors raised by the cooperative Context."""

from __future__ import annotations


class AreaCallbackError(RuntimeError):
    """An Area callback raised (or returned bad data); the Context was rolled back before it."""

    def __init__(self, area_id: str, area_class: str, callback: str, cause: BaseException) -> None:
        self.area_id = area_id
        self.area_class = area_class
        self.callback = callback
        self.cause = cause
        message = (
            f"Area {area_id} ({area_class}) failed in {callback}(): {type(cause).__name__}: {cause}"
        )
        super().__init__(message)


class AreaRegistrationError(TypeError):
    """register() refused an Area: unhashable, or the same instance registered twice."""
