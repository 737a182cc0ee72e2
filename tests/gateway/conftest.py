from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.gateway.fake_http import FakeServer
from tests.gateway.providers import KEY, KEY_ENV, PROVIDERS, Provider

_PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback requests must reach the fake server, never a proxy from the environment."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def server() -> AsyncIterator[FakeServer]:
    fake = FakeServer()
    await fake.start()
    yield fake
    await fake.close()


@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def provider(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Provider:
    """Each network provider in turn, with its key variable set to `KEY`."""
    monkeypatch.setenv(KEY_ENV, KEY)
    assert isinstance(request.param, Provider)
    return request.param
