from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from engine.gateway.base import Gateway
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
    await fake.aclose()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes `provider` (or the `gateway` built on it) runs once per network
    provider, or only for the one its module names in `PROVIDER` (a module that reads one
    provider's wire format)."""
    if "provider" in metafunc.fixturenames:
        name = getattr(metafunc.module, "PROVIDER", None)
        chosen = [p for p in PROVIDERS if name in (None, p.name)]
        assert chosen, f"no provider named {name!r}"
        metafunc.parametrize("provider", chosen, ids=lambda p: p.name, indirect=True)


@pytest.fixture
def provider(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Provider:
    """Each network provider in turn, with its key variable set to `KEY`."""
    monkeypatch.setenv(KEY_ENV, KEY)
    assert isinstance(request.param, Provider)
    return request.param


@pytest.fixture
async def gateway(provider: Provider, server: FakeServer) -> AsyncIterator[Gateway]:
    """`provider`'s gateway on the fake server, under the path its real base URL has, its key
    read from `KEY_ENV` at each request."""
    made = provider.make(base_url=server.base_url + provider.version, api_key_env=KEY_ENV)
    yield made
    await made.aclose()
