"""Fixtures more than one test package uses: the throwaway PostgreSQL cluster (the store tests,
the two `trellis serve` processes of the ACP tests) and the workspace a session works in."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg_cluster import REQUIRE_ENV, Cluster, ClusterUnavailable, required

MACHINE_MODELS = ("OPENAI_BASE_URL",)
"""Besides every `*_API_KEY`: what would make the machine's models part of a test's config."""


@pytest.fixture(autouse=True)
def no_machine_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees this machine's provider keys or endpoints, nor asks its local servers for
    models: a test that wants them sets its own (`TRELLIS_LOCAL_SERVERS` names a test server)."""
    for name in os.environ:
        if name.endswith("_API_KEY") or name in MACHINE_MODELS:
            monkeypatch.delenv(name)
    monkeypatch.setenv("TRELLIS_LOCAL_SERVERS", "")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL cluster for the whole run; each test takes a schema of its own.

    Without a PostgreSQL server on the machine its tests skip, unless `TRELLIS_REQUIRE_POSTGRES`
    is set (CI sets it), where they fail.
    """
    try:
        cluster = Cluster.start()
    except ClusterUnavailable as exc:
        if required():
            pytest.fail(f"PostgreSQL is required ({REQUIRE_ENV}) but unavailable: {exc}")
        pytest.skip(f"no PostgreSQL cluster: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace: the session's cwd (and an ACP server's served root). A package or a
    test that needs files in it overrides this fixture with one that takes it and adds them. The
    same directory as `make_agent`'s (tests/agent/conftest.py), whichever makes it first."""
    path = tmp_path / "ws"
    path.mkdir(exist_ok=True)
    return path.resolve()
