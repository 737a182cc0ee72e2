"""Ctrl+O, the main screen's key of a followed session (`trellis --resume ID` of a session another
process writes, on PostgreSQL): once that writer lets go, Ctrl+O opens the session for writing
here. Two terminals: the writer, and the follower whose key is pressed."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pexpect

from app.tui.screens.main import MainScreen
from tests.agent.harness import trellis_argv, trellis_env
from tests.pg_cluster import PASSWORD, Cluster
from tests.store.test_store_copy import new_database
from tests.terminal import Terminal
from tests.tui.keys.checks import KeyChecks
from tests.tui.keys.conftest import Place

CHECKS = KeyChecks()
PASSWORD_ENV = "PG_KEY_TESTS_PASSWORD"


@CHECKS.step(MainScreen, "ctrl+o")
def open_for_writing(terminal: Terminal) -> None:
    """Ctrl+O on a followed session whose writer let go opens it here: the prompt takes words
    again and sends them."""
    terminal.press("ctrl+o")
    terminal.wait_gone("● let go")
    terminal.wait_for("Ask the agent")
    terminal.write("written here")
    terminal.press("enter")
    terminal.wait_for("█ written here")
    terminal.wait_for("You said")


def test_ctrl_o_opens_a_followed_session_its_writer_let_go(
    place: Place, pg_cluster: Cluster
) -> None:
    url = asyncio.run(new_database(pg_cluster))
    config = place.home / "config.toml"
    config.write_text(f'[store]\nurl = "{url}"\npassword_env = "{PASSWORD_ENV}"\n', "utf-8")
    env = {PASSWORD_ENV: PASSWORD}

    def console(*args: str) -> Terminal:
        return Terminal(list(args), home=place.home, cwd=place.workspace, config=config, env=env)

    with console() as writer:
        writer.wait_for("Ask the agent")
        writer.write("hello from the writer")
        writer.press("enter")
        writer.wait_for("You said")
        session_id = only_session(place, config, env)
        with console("--resume", session_id) as follower:
            follower.wait_for("█ hello from the writer")
            follower.wait_for("● following")
            writer.press("ctrl+q")
            writer.child.expect(pexpect.EOF, timeout=30)
            follower.wait_for("● let go")
            follower.wait_for("^o Open for writing")  # the footer offers the key now
            CHECKS.run(follower)


def only_session(place: Place, config: Path, env: dict[str, str]) -> str:
    """The id of the one session stored (`trellis sessions --json`)."""
    environment = trellis_env(home=place.data, config=config) | env
    listed = subprocess.run(
        trellis_argv(["sessions", "--json"]),
        cwd=place.workspace,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (session,) = json.loads(listed.stdout)
    return str(session["id"])
