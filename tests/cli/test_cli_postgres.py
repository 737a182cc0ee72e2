"""Every command works unchanged on a PostgreSQL store named by the user config: run, resume,
sessions, show, fork, delete."""

from __future__ import annotations

import json
from pathlib import Path

from tests.pg_cluster import Cluster
from tests.store.test_store_copy import PASSWORD_VAR, new_database, run


async def test_the_commands_on_a_postgresql_store(pg_cluster: Cluster, tmp_path: Path) -> None:
    url = await new_database(pg_cluster)
    (tmp_path / "config.toml").write_text(
        f'[store]\nurl = "{url}"\npassword_env = "{PASSWORD_VAR}"\n', encoding="utf-8"
    )
    first = run(["run", "-p", "hello there"], tmp_path)
    assert first.returncode == 0, first.stderr
    session_id = first.stderr.strip().splitlines()[-1].removeprefix("[session ").rstrip("]")
    resumed = run(["run", "--resume", session_id[:8], "-p", "and again"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr

    listed = run(["sessions", "--json"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    (record,) = json.loads(listed.stdout)
    assert (record["id"], record["turns"]) == (session_id, 2)
    assert not (tmp_path / "home" / "sessions.sqlite").exists()  # nothing went to SQLite

    shown = run(["show", session_id], tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "hello there" in shown.stdout
    assert "and again" in shown.stdout
    forked = run(["fork", session_id], tmp_path)
    assert forked.returncode == 0, forked.stderr
    fork_id = forked.stdout.strip()
    deleted = run(["delete", "--yes", session_id], tmp_path)
    assert deleted.returncode == 0, deleted.stderr
    remaining = json.loads(run(["sessions", "--json"], tmp_path).stdout)
    assert [(s["id"], s["parent"]) for s in remaining] == [(fork_id, session_id)]


def test_a_project_naming_the_store_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    (tmp_path / ".trellis").mkdir()
    (tmp_path / ".trellis" / "config.toml").write_text(
        '[store]\nurl = "postgresql://x@127.0.0.1/y"\n', encoding="utf-8"
    )
    for args in (["sessions"], ["run", "-p", "hi"]):
        done = run(args, tmp_path)
        assert done.returncode == 2
        assert "store: the session store is set in the user config only" in done.stderr
        assert len(done.stderr.splitlines()) == 1
