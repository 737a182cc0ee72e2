"""Search on both stores: what is indexed, ranking and snippets, scoping to a workspace, the index
fed after flushes, an existing store indexed once, deletion and forks."""

from __future__ import annotations

import asyncio

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
from engine.store.errors import SearchSyntaxError
from tests.store.conftest import StoreFactory


async def new_session(store: SessionStore, cwd: str = "/w") -> Session:
    info = await store.create(cwd=cwd)
    return Session(info.id, store)


def turn(session: Session, prompt: str, reply: str, *, tool: str = "", result: str = "") -> None:
    """A turn: the prompt, a step that calls a tool (when `tool`), then the reply."""
    number = session.state.last_turn + 1
    session.append(TurnStart(turn=number))
    session.append(UserMessage(content=prompt))
    step = session.state.last_step + 1
    session.append(StepStart(turn=number, step=step))
    if tool:
        call = ToolCall(f"c{number}", tool, {"path": "notes.md"})
        session.append(
            AssistantMessage(turn=number, step=step, tool_calls=(call,), finish="tool_calls")
        )
        session.append(
            ToolCallRecord(
                turn=number, step=step, call_id=call.id, name=tool, arguments={"path": "notes.md"}
            )
        )
        session.append(ToolResultRecord(turn=number, step=step, call_id=call.id, content=result))
        session.append(StepEnd(turn=number, step=step))
        step += 1
        session.append(StepStart(turn=number, step=step))
    session.append(AssistantMessage(turn=number, step=step, content=reply))
    session.append(StepEnd(turn=number, step=step))
    session.append(TurnEnd(turn=number, reason="completed"))


async def test_every_kind_of_text_is_found_with_its_place(store: SessionStore) -> None:
    session = await new_session(store)
    turn(
        session,
        "where is the walrus",
        "The walrus is in notes.md",
        tool="read_file",
        result="a walrus line",
    )
    session.append(UserMessage(content="walrus context", source=Source("command", "inject")))
    turn(session, "thanks", "no more")
    await session.flush()
    await store.update_index()
    hits = await store.search("walrus")
    kinds = {(h.kind, h.type) for h in hits}
    assert kinds == {
        ("user", "user/message"),
        ("assistant", "assistant/message"),
        ("tool", "tool/result"),
        ("injected", "user/message"),
    }
    prompt = next(h for h in hits if h.kind == "user")
    assert (prompt.session_id, prompt.seq, prompt.turn) == (session.id, 1, 1)
    injected = next(h for h in hits if h.kind == "injected")
    assert injected.turn == 1  # out of a turn: the turn it follows
    assert all(h.snippet[a:b].lower() == "walrus" for h in hits for a, b in h.marks)
    assert all(h.marks for h in hits)
    # the tool's name and arguments are text too
    assert {h.type for h in await store.search("read_file")} == {"tool/call"}


async def test_ranking_and_query_forms(store: SessionStore) -> None:
    session = await new_session(store)
    turn(session, "cache cache cache prefix", "one mention of cache among many other words here")
    turn(session, "prefix stability", "the prefix digest")
    await session.flush()
    await store.update_index()
    ranked = await store.search("cache")
    assert next(h.seq for h in ranked) == 1  # the denser text ranks first
    assert ranked[0].score >= ranked[1].score
    assert {h.seq for h in await store.search('"prefix digest"')} == {9}
    assert {h.seq for h in await store.search("cache -prefix")} == {3}
    assert {h.seq for h in await store.search("digest OR stability")} == {7, 9}
    assert {h.seq for h in await store.search("stabil*")} == {7}
    assert len(await store.search("cache", limit=1)) == 1
    assert [h.seq for h in await store.search("cache", offset=1)] == [h.seq for h in ranked[1:]]


async def test_snippet_is_cut_around_the_match(store: SessionStore) -> None:
    session = await new_session(store)
    long = "filler " * 100 + "the needle is here " + "tail " * 100
    turn(session, long, "ok")
    await session.flush()
    await store.update_index()
    (hit,) = await store.search("needle")
    assert hit.snippet.startswith("…")
    assert hit.snippet.endswith("…")
    assert "\n" not in hit.snippet
    ((a, b),) = hit.marks
    assert hit.snippet[a:b] == "needle"


async def test_punctuated_words_match_as_their_parts(store: SessionStore) -> None:
    session = await new_session(store)
    turn(session, "open app.py and read_file", "Élan café")
    await session.flush()
    await store.update_index()
    assert len(await store.search("app.py")) == 1
    assert len(await store.search("read_file")) == 1
    assert len(await store.search("APP")) == 1
    assert len(await store.search("py.app")) == 0  # a phrase keeps its order


async def test_scoped_to_a_workspace(store: SessionStore) -> None:
    here = await new_session(store, "/here")
    there = await new_session(store, "/there")
    turn(here, "shared word", "ok")
    turn(there, "shared word", "ok")
    await here.flush()
    await there.flush()
    await store.update_index()
    assert {h.session_id for h in await store.search("shared", cwd="/here")} == {here.id}
    assert {h.session_id for h in await store.search("shared")} == {here.id, there.id}
    assert (await store.search("shared", cwd="/here"))[0].cwd == "/here"


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ('"unclosed', "not closed"),
        ("OR cache", "OR needs"),
        ("cache OR", "OR needs"),
        ("-cache", "only excludes"),
        ("   ", "no word to find"),
        ("* & -", "no word to find"),
        ("a OR -b", "cannot join"),
    ],
)
async def test_a_bad_query_says_why(store: SessionStore, query: str, said: str) -> None:
    with pytest.raises(SearchSyntaxError, match=said):
        await store.search(query)


async def test_fts_syntax_is_taken_as_words(store: SessionStore) -> None:
    """What FTS5 or tsquery would read as syntax is only words here: never a database error."""
    session = await new_session(store)
    turn(session, "NEAR(a b) x:y a & b ^c what's (paren", "ok")
    await session.flush()
    await store.update_index()
    for query in ["NEAR(a", "x:y", "a & b", "^c", "what's", "(paren", "AND", "NOT"]:
        await store.search(query)
    assert len(await store.search("what's")) == 1


async def test_the_index_is_fed_after_flushes_and_at_close(store_factory: StoreFactory) -> None:
    writer = await store_factory()
    session = await new_session(writer)
    turn(session, "background marmot", "ok")
    await session.flush()
    assert await writer.unindexed() > 0  # not in the flush: after it
    await writer.aclose()  # what it flushed is indexed before it goes
    reader = await store_factory()
    assert await reader.unindexed() == 0
    assert len(await reader.search("marmot")) == 1


async def test_the_index_catches_up_once_the_writer_is_quiet(store: SessionStore) -> None:
    session = await new_session(store)
    turn(session, "quiet vole", "ok")
    await session.flush()
    assert await store.unindexed() > 0
    for _ in range(100):
        await asyncio.sleep(0.05)
        if await store.unindexed() == 0:
            break
    assert await store.unindexed() == 0
    assert len(await store.search("vole")) == 1


async def test_an_existing_store_is_indexed_once(store_factory: StoreFactory) -> None:
    from engine.store.postgres.store import PostgresStore
    from engine.store.sqlite.store import SQLiteStore

    first = await store_factory()
    assert isinstance(first, SQLiteStore | PostgresStore)
    first._index.enabled = False  # a Trellis from before the index wrote these
    sessions = [await new_session(first) for _ in range(3)]
    for i, session in enumerate(sessions):
        for n in range(40):
            turn(session, f"otter {i} {n}", "ok")
        await session.flush()
    await first.aclose()
    store = await store_factory()
    waiting = await store.unindexed()
    assert waiting == 3 * 40 * 6
    seen: list[int] = []
    assert await store.update_index(seen.append) == waiting
    assert seen == sorted(seen)
    assert seen[-1] == waiting
    assert len(seen) > 1
    assert await store.unindexed() == 0
    assert await store.update_index() == 0  # once
    assert len(await store.search("otter", limit=500)) == 3 * 40


async def test_delete_takes_a_session_out_of_the_index(store: SessionStore) -> None:
    kept = await new_session(store)
    gone = await new_session(store)
    turn(kept, "heron kept", "ok")
    turn(gone, "heron gone", "heron reply", tool="grep", result="heron result")
    await kept.flush()
    await gone.flush()
    await store.update_index()
    await store.delete(gone.id)
    assert {h.session_id for h in await store.search("heron")} == {kept.id}
    # a new session written after the delete is found, and nothing of the deleted one comes back
    fresh = await new_session(store)
    turn(fresh, "later", "later reply", tool="grep", result="later result")
    await fresh.flush()
    await store.update_index()
    assert {h.session_id for h in await store.search("heron")} == {kept.id}
    assert len(await store.search("later")) == 3


async def test_an_unindexed_delete_is_clean(store: SessionStore) -> None:
    """A session deleted before the index saw it: nothing to take out, nothing left behind."""
    session = await new_session(store)
    turn(session, "ibis", "ok")
    await session.flush()
    await store.delete(session.id)
    await store.update_index()
    assert await store.search("ibis") == []


async def test_a_fork_is_searchable(store: SessionStore) -> None:
    session = await new_session(store)
    turn(session, "first lynx", "ok")
    turn(session, "second lynx", "ok")
    await session.flush()
    fork = await store.fork(session.id, 6)
    await store.update_index()
    found = {(h.session_id, h.turn) for h in await store.search("lynx")}
    assert found == {(session.id, 1), (session.id, 2), (fork.id, 1)}
