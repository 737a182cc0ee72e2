"""`trellis stats` sums the store: sessions, steps, tokens by part, cost per currency, by model,
day or session, from a date on; on SQLite and on PostgreSQL alike, a fork's inherited steps
counted once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.events import Cost, ModelBind, StepEnd, StepStart, TurnEnd, TurnStart, Usage
from engine.session import Session
from engine.store.base import SessionStore
from engine.store.catalog import SessionCatalog
from engine.store.postgres.catalog import PostgresCatalog
from engine.store.postgres.database import PostgresDatabase
from engine.store.postgres.store import PostgresStore
from engine.store.sqlite.catalog import SQLiteCatalog
from engine.store.sqlite.database import SQLiteDatabase
from engine.store.sqlite.store import SQLiteStore
from engine.usage_stats import parse_since, usage_stats
from tests.pg_cluster import PASSWORD, Cluster
from tests.store.test_store_copy import PASSWORD_VAR, new_database, run

DAY = 86_400.0
MONDAY = parse_since("2026-03-02")


class Clock:
    """A clock the test sets: each event is stamped with `now`."""

    def __init__(self) -> None:
        self.now = MONDAY

    def __call__(self) -> float:
        return self.now


@dataclass
class Opened:
    store: SessionStore
    catalog: SessionCatalog
    clock: Clock


@pytest.fixture(params=["sqlite", "postgres"])
async def opened(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opened]:
    """A store and the catalog `trellis stats` reads it through, on one database."""
    clock = Clock()
    store: SQLiteStore | PostgresStore
    if request.param == "postgres":
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        schema: str = request.getfixturevalue("pg_schema")
        store = PostgresStore(cluster.url, password=PASSWORD, schema=schema, clock=clock)
        pg_db = PostgresDatabase(cluster.url, password=PASSWORD, schema=schema, busy_timeout=5.0)
        db: SQLiteDatabase | PostgresDatabase = pg_db
        catalog: SessionCatalog = PostgresCatalog(pg_db)
    else:
        path = tmp_path / "sessions.sqlite"
        store = SQLiteStore(path, clock=clock)
        sqlite_db = SQLiteDatabase(path, busy_timeout=5.0)
        db = sqlite_db
        catalog = SQLiteCatalog(sqlite_db)
    await store.open()
    await db.open()
    yield Opened(store, catalog, clock)
    await db.aclose()
    await store.aclose()


def turn(session: Session, usages: list[tuple[Usage, Cost | None]]) -> None:
    number = session.state.last_turn + 1
    session.append(TurnStart(turn=number))
    for usage, cost in usages:
        step = session.state.last_step + 1
        session.append(StepStart(turn=number, step=step))
        session.append(StepEnd(turn=number, step=step, usage=usage, cost=cost))
    session.append(TurnEnd(turn=number, reason="completed"))


CACHED = Usage(input_tokens=100, cache_read_tokens=900, cache_write_tokens=50, output_tokens=20)
PLAIN = Usage(input_tokens=300, output_tokens=30)


async def test_totals_by_model_day_and_session_since_a_date(opened: Opened) -> None:
    store, clock = opened.store, opened.clock
    first = Session((await store.create(cwd="/w", model="claude")).id, store, clock=clock)
    first.append(ModelBind(model="claude", grant_epoch=1))
    turn(first, [(CACHED, Cost(amount=0.01, currency="USD"))] * 2)
    first.append(ModelBind(model="local", grant_epoch=2))
    clock.now += DAY
    turn(first, [(PLAIN, None)])
    await first.flush()
    second = Session((await store.create(cwd="/v", model="gpt")).id, store, clock=clock)
    second.append(ModelBind(model="gpt", grant_epoch=1))
    turn(second, [(PLAIN, Cost(amount=0.5, currency="EUR"))])
    await second.flush()

    rows = await opened.catalog.step_rows(None)
    total = usage_stats(rows, None).total
    assert (len(total.sessions), total.steps) == (2, 4)
    assert total.tokens == {
        "input_tokens": 800,
        "cache_read_tokens": 1800,
        "cache_write_tokens": 100,
        "output_tokens": 100,
    }
    assert total.cost == pytest.approx({"USD": 0.02, "EUR": 0.5})

    by_model = usage_stats(rows, "model").groups
    assert [(g.key, g.steps, len(g.sessions)) for g in by_model] == [
        ("claude", 2, 1),
        ("gpt", 1, 1),
        ("local", 1, 1),
    ]
    assert by_model[2].cost == {}  # the local model has no price
    by_day = usage_stats(rows, "day").groups
    assert [(g.key, g.steps) for g in by_day] == [("2026-03-02", 2), ("2026-03-03", 2)]
    by_session = usage_stats(rows, "session").groups
    assert sorted(g.steps for g in by_session) == [1, 3]

    later = usage_stats(await opened.catalog.step_rows(MONDAY + DAY), "model")
    assert [(g.key, g.steps) for g in later.groups] == [("gpt", 1), ("local", 1)]
    assert later.total.record()["tokens"] == {
        "input": 600,
        "cache_read": 0,
        "cache_write": 0,
        "output": 60,
    }


async def test_a_fork_counts_only_its_own_steps(opened: Opened) -> None:
    store, clock = opened.store, opened.clock
    parent = Session((await store.create(cwd="/w", model="claude")).id, store, clock=clock)
    parent.append(ModelBind(model="claude", grant_epoch=1))
    turn(parent, [(CACHED, Cost(amount=0.25, currency="USD"))])
    await parent.flush()
    info = await store.info(parent.id)
    fork = await store.fork(parent.id, info.event_count)
    child = Session(fork.id, store, (await store.load(fork.id)).events, clock=clock)
    turn(child, [(PLAIN, Cost(amount=0.5, currency="USD"))])
    await child.flush()

    found = usage_stats(await opened.catalog.step_rows(None), "model")
    assert found.total.steps == 2
    assert found.total.cost == pytest.approx({"USD": 0.75})
    # the fork's own step ran on the model its inherited binding names
    assert [(g.key, g.steps, len(g.sessions)) for g in found.groups] == [("claude", 2, 2)]


def test_a_bad_date_is_named() -> None:
    with pytest.raises(ValueError, match="'yesterday' is not a date"):
        parse_since("yesterday")
    assert parse_since("2026-03-02T01:00+01:00") == MONDAY


PRICED = (
    'default_model = "offline"\n[models.offline]\nprovider = "scripted"\n'
    'price = { input = 2.0, output = 10.0, currency = "USD" }\n'
)


def test_the_command_prints_a_table_and_json(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(PRICED, encoding="utf-8")
    done = run(["run", "-p", "hello there"], tmp_path)
    assert done.returncode == 0, done.stderr

    table = run(["stats", "--by", "model"], tmp_path)
    assert table.returncode == 0, table.stderr
    header, row, total = table.stdout.splitlines()
    assert header.split() == [
        "model",
        "sessions",
        "steps",
        "input",
        "cache",
        "read",
        "cache",
        "write",
        "output",
        "cost",
    ]
    assert row.split()[:3] == ["offline", "1", "1"]
    assert row.endswith(" USD")
    assert total.startswith("total")

    printed = json.loads(run(["stats", "--json"], tmp_path).stdout)
    assert printed["by"] is None
    assert printed["total"]["steps"] == 1
    assert set(printed["total"]["cost"]) == {"USD"}
    assert printed["total"]["tokens"]["input"] > 0

    since = json.loads(
        run(["stats", "--json", "--since", "2026-03-02T01:00+01:00"], tmp_path).stdout
    )
    assert since["since"] == "2026-03-02T00:00:00+00:00"
    none = run(["stats", "--since", "2999-01-01"], tmp_path)
    assert (none.returncode, none.stdout) == (0, "no steps since then\n")
    bad = run(["stats", "--since", "last week"], tmp_path)
    assert bad.returncode == 2
    assert "argument --since: 'last week' is not a date" in bad.stderr


async def test_the_command_on_a_postgresql_store(pg_cluster: Cluster, tmp_path: Path) -> None:
    url = await new_database(pg_cluster)
    (tmp_path / "config.toml").write_text(
        f'{PRICED}[store]\nurl = "{url}"\npassword_env = "{PASSWORD_VAR}"\n',
        encoding="utf-8",
    )
    for prompt in ("one", "two"):
        done = run(["run", "-p", prompt], tmp_path)
        assert done.returncode == 0, done.stderr
    printed = json.loads(run(["stats", "--json", "--by", "session"], tmp_path).stdout)
    assert [g["steps"] for g in printed["groups"]] == [1, 1]
    assert printed["total"]["sessions"] == 2
    assert not (tmp_path / "home" / "sessions.sqlite").exists()
