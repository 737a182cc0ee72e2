"""`--store URL` on the session commands (`trellis`, `run`, `sessions`, `show`, `export`, `fork`,
`delete`, `replay`), before the command or after it, as `serve` and `acp` take it: a PostgreSQL
store named on the command line, with no `[store] url` in any config."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.cli.test_cli_sessions import Cli
from tests.pg_cluster import PASSWORD, Cluster
from tests.store.test_store_copy import PASSWORD_VAR, new_database

BAD_URLS = ("postgresql://me:hunter2@127.0.0.1/db", "mysql://127.0.0.1/db")
COMMANDS: tuple[list[str], ...] = (
    [],
    ["--resume", "abc"],
    ["replay", "abc"],
    ["run", "-p", "hi"],
    ["sessions"],
    ["show", "abc"],
    ["export", "abc", "--format", "md"],
    ["fork", "abc"],
    ["delete", "--yes", "abc"],
)


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """The user config names where the password is, not the store: SQLite unless `--store`."""
    config = tmp_path / "config.toml"
    config.write_text(f'[store]\npassword_env = "{PASSWORD_VAR}"\n', encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.setenv("TRELLIS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRELLIS_CONFIG", str(config))
    monkeypatch.setenv(PASSWORD_VAR, PASSWORD)
    monkeypatch.delenv("TRELLIS_STORE_URL", raising=False)
    monkeypatch.chdir(workspace)
    return Cli(capsys, tmp_path / "home")


def test_the_session_commands_work_on_the_store_the_command_line_names(
    pg_cluster: Cluster, cli: Cli
) -> None:
    url = asyncio.run(new_database(pg_cluster))
    code, _, err = cli("run", "--store", url, "-p", "hello there")
    assert code == 0, err
    session_id = err.strip().splitlines()[-1].removeprefix("[session ").rstrip("]")
    code, _, err = cli("run", "--resume", session_id[:8], "--store", url, "-p", "and again")
    assert code == 0, err

    assert json.loads(cli("sessions", "--all", "--json")[1]) == []  # the configured SQLite
    for listing in (("sessions", "--all", "--json", "--store", url), ("--store", url, "sessions")):
        code, out, err = cli(*listing)
        assert code == 0, err
        assert session_id in out
    code, out, _ = cli("show", session_id[:8], "--store", url)
    assert (code, "hello there" in out, "and again" in out) == (0, True, True)
    code, out, _ = cli("export", session_id, "--format", "json", "--store", url)
    assert code == 0
    assert json.loads(out)["session"]["id"] == session_id
    code, fork_id, _ = cli("--store", url, "fork", session_id)
    assert code == 0
    assert cli("delete", "--yes", session_id, "--store", url)[0] == 0
    listed = json.loads(cli("sessions", "--all", "--json", "--store", url)[1])
    assert [(s["id"], s["parent"]) for s in listed] == [(fork_id.strip(), session_id)]


@pytest.mark.parametrize("url", BAD_URLS)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "console")
def test_a_refused_store_url_is_one_line_and_exit_2(cli: Cli, command: list[str], url: str) -> None:
    for argv in (["--store", url, *command], [*command, "--store", url]):
        line = cli.fails(*argv)
        assert line.startswith("trellis: --store")
        assert "hunter2" not in line
