"""The store factory the contract suite runs against, and helpers that write realistic logs."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from engine.events import (
    AssistantMessage,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.message import Source, ToolCall
from engine.session import Session
from engine.store.base import SessionStore
from engine.store.postgres.store import PostgresStore
from engine.store.sqlite.store import SQLiteStore
from tests.pg_cluster import PASSWORD, Cluster

StoreFactory = Callable[[], Awaitable[SessionStore]]


class Tick:
    """A clock that moves one second per reading, so `updated` orders are deterministic."""

    def __init__(self) -> None:
        self._ticks = itertools.count(1_000_000)

    def __call__(self) -> float:
        return float(next(self._ticks))


@pytest.fixture
def pg_schema() -> str:
    """A schema of its own for each test on the shared cluster."""
    return f"t_{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["sqlite", "postgres"])
async def store_factory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[StoreFactory]:
    """Each call opens another store (another writer) on the same database."""
    clock = Tick()
    opened: list[SessionStore] = []
    open_one: Callable[[], SessionStore]
    if request.param == "postgres":
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        schema: str = request.getfixturevalue("pg_schema")

        def open_one() -> SessionStore:
            return PostgresStore(cluster.url, password=PASSWORD, schema=schema, clock=clock)
    else:

        def open_one() -> SessionStore:
            return SQLiteStore(tmp_path / "data" / "sessions.sqlite", clock=clock)

    async def make() -> SessionStore:
        store = open_one()
        assert isinstance(store, SQLiteStore | PostgresStore)
        await store.open()
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.aclose()


@pytest.fixture
async def store(store_factory: StoreFactory) -> SessionStore:
    return await store_factory()


def open_turn(session: Session, prompt: str = "hello") -> int:
    """Start a turn with its prompt; returns the turn number."""
    turn = session.state.last_turn + 1
    session.append(TurnStart(turn=turn))
    session.append(UserMessage(content=prompt))
    return turn


def step(session: Session, turn: int, *, calls: int = 0, results: int | None = None) -> None:
    """One step with `calls` tool calls of which `results` (default all) get results; closed only
    if every call got its result."""
    number = session.state.last_step + 1
    ids = [f"t{turn}s{number}c{i}" for i in range(calls)]
    session.append(StepStart(turn=turn, step=number))
    session.append(
        AssistantMessage(
            turn=turn,
            step=number,
            content="reply",
            tool_calls=tuple(ToolCall(i, "read_file") for i in ids),
            finish="tool_calls" if calls else "stop",
        )
    )
    for call_id in ids:
        session.append(ToolCallRecord(turn=turn, step=number, call_id=call_id, name="read_file"))
    done = calls if results is None else results
    for call_id in ids[:done]:
        session.append(ToolResultRecord(turn=turn, step=number, call_id=call_id, content="ok"))
    if done == calls:
        session.append(StepEnd(turn=turn, step=number))


def full_turn(session: Session, prompt: str = "hello", *, calls: int = 1) -> None:
    turn = open_turn(session, prompt)
    step(session, turn, calls=calls)
    step(session, turn)
    session.append(TurnEnd(turn=turn, reason="completed"))


def inject(session: Session, text: str = "note") -> None:
    """An out-of-turn user/message, as an idle inject() writes it."""
    session.append(UserMessage(content=text, source=Source("plugin")))
