"""`trellis search`: scoping like `trellis sessions`, JSON, the one-time indexing of an existing
store with its progress, a privacy limit, and a bad query ending as one line, not a traceback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from app import cli
from engine.events import TurnEnd, TurnStart, UserMessage
from engine.message import Source
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.session import Session
from engine.store.sqlite.store import SQLiteStore


class Home:
    def __init__(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.db = tmp_path / "home" / "sessions.sqlite"
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.capsys = capsys

    def write(self, cwd: Path, *prompts: str, label: PrivatizationLabel | None = None) -> str:
        """A session of `cwd` with one turn per prompt, stored by a Trellis without the index."""

        async def write() -> str:
            async with SQLiteStore(self.db, search_index=False) as store:
                info = await store.create(cwd=str(cwd))
                session = Session(info.id, store)
                for number, prompt in enumerate(prompts, 1):
                    session.append(TurnStart(turn=number))
                    session.append(UserMessage(content=prompt, label=label))
                    session.append(TurnEnd(turn=number, reason="completed"))
                await session.flush()
                return info.id

        return asyncio.run(write())

    def main(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = cli.main(list(args))
        out, err = self.capsys.readouterr()
        return code, out, err


@pytest.fixture
def home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Home:
    found = Home(tmp_path, capsys)
    monkeypatch.setenv("TRELLIS_HOME", str(found.db.parent))
    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("TRELLIS_CONFIG", str(config))
    monkeypatch.delenv("TRELLIS_STORE_URL", raising=False)
    monkeypatch.chdir(found.workspace)
    return found


def test_search_indexes_once_then_finds_in_this_workspace(home: Home, tmp_path: Path) -> None:
    here = home.write(home.workspace, "the puffin flies", "a second puffin")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    there = home.write(elsewhere, "another puffin")
    code, out, err = home.main("search", "puffin")
    assert code == 0
    assert "indexing 9 events for search" in err
    assert err.rstrip().endswith("done")
    blocks = out.strip().split("\n")
    assert len(blocks) == 4  # two hits of this workspace, two lines each
    assert blocks[0].startswith(f"{here[:12]}  turn ")
    assert "puffin" in blocks[1]
    assert there[:12] not in out
    # indexed once: the next search says nothing of indexing
    code, out, err = home.main("search", "puffin", "--all")
    assert (code, err) == (0, "")
    assert there[:12] in out
    assert str(elsewhere) in out  # every workspace: each hit names its own


def test_search_json(home: Home) -> None:
    session = home.write(home.workspace, "json gannet")
    code, out, _ = home.main("search", "gannet", "--json")
    assert code == 0
    (hit,) = json.loads(out)
    assert (hit["session"], hit["turn"], hit["seq"], hit["kind"]) == (session, 1, 1, "user")
    a, b = hit["marks"][0]
    assert hit["snippet"][a:b] == "gannet"
    code, out, _ = home.main("search", "nothing-like-it", "--json")
    assert (code, json.loads(out)) == (0, [])


def test_no_match_says_where_it_looked(home: Home) -> None:
    home.write(home.workspace, "tern")
    code, out, _ = home.main("search", "albatross")
    assert code == 0
    assert out.startswith("no matches in ")
    assert "--all" in out


@pytest.mark.parametrize("query", [['"unclosed'], ["--", "-only"], ["a OR"]])
def test_a_bad_query_is_one_line(home: Home, query: list[str]) -> None:
    home.write(home.workspace, "skua")
    code, out, err = home.main("search", *query)
    assert code == 2
    assert out == ""
    assert err.startswith("trellis: ")
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_max_class_leaves_out_what_an_export_would_redact(home: Home) -> None:
    home.write(
        home.workspace, "public kittiwake", label=PrivatizationLabel(cls=PrivacyClass.public)
    )
    home.write(
        home.workspace, "private kittiwake", label=PrivatizationLabel(cls=PrivacyClass.private)
    )
    code, out, _ = home.main("search", "kittiwake", "--json")
    assert len(json.loads(out)) == 2  # as `trellis show` shows them
    code, out, _ = home.main("search", "kittiwake", "--json", "--max-class", "internal")
    (hit,) = json.loads(out)
    assert "public" in hit["snippet"]
    code, _, err = home.main("search", "kittiwake", "--max-class", "secret")
    assert code == 2
    assert "--max-class" in err


def test_injected_text_is_found(home: Home) -> None:
    async def write() -> None:
        async with SQLiteStore(home.db) as store:
            info = await store.create(cwd=str(home.workspace))
            session = Session(info.id, store)
            session.append(
                UserMessage(content="cormorant note", source=Source("command", "inject"))
            )
            await session.flush()

    asyncio.run(write())
    _code, out, _ = home.main("search", "cormorant", "--json")
    assert [h["kind"] for h in json.loads(out)] == ["injected"]
