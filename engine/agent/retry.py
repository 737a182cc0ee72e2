"""Retrying a model call: transient gateway failures (timeouts, 429, 5xx) get another attempt."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from engine.gateway.base import GatewayError

T = TypeVar("T")


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    max_retries: int,
    backoff: float,
    on_retry: Callable[[int, GatewayError], None] | None = None,
) -> T:
    """Run `attempt`, again after each transient failure, up to `max_retries` times.

    The delay doubles from `backoff` seconds; `on_retry(number, error)` is told before each wait
    (the loop logs a `retry` event). A permanent failure, or the last transient one, raises.
    """
    retries = 0
    while True:
        try:
            return await attempt()
        except GatewayError as exc:
            if not exc.transient or retries >= max_retries:
                raise
            retries += 1
            if on_retry is not None:
                on_retry(retries, exc)
            await asyncio.sleep(backoff * 2 ** (retries - 1))
