"""Fixtures more than one test package uses: the throwaway PostgreSQL cluster (the store tests,
the two `trellis serve` processes of the ACP tests)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pg_cluster import REQUIRE_ENV, Cluster, ClusterUnavailable, required


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
