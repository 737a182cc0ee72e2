"""How a session reads in a list: a fork names its parent, a workspace fits its column."""

from __future__ import annotations

from app.session_rows import fork_note, short_workspace
from engine.store.base import SessionInfo


def test_a_fork_names_its_parent_by_the_id_the_lists_show_and_where_it_was_forked() -> None:
    parent = "0123456789abcdef" * 2
    fork = SessionInfo(id="f" * 32, cwd="/w", parent_id=parent, fork_seq=12, created=0, updated=0)
    assert fork_note(fork) == "↳ fork of 01234567 @12"
    assert fork_note(fork, compact=True) == "↳ 01234567 @12"
    assert fork_note(SessionInfo(id="a" * 32, cwd="/w", created=0, updated=0)) == ""


def test_the_home_folder_is_a_tilde() -> None:
    assert short_workspace("/home/ada/src/app", home="/home/ada") == "~/src/app"
    assert short_workspace("/home/ada", home="/home/ada") == "~"
    assert short_workspace("/home/adam/app", home="/home/ada") == "/home/adam/app"
    assert short_workspace("/srv/app", home="") == "/srv/app"
    assert short_workspace("/srv/app", home="/") == "/srv/app"


def test_a_long_workspace_keeps_its_tail() -> None:
    path = "/srv/builds/clients/acme/web-frontend"
    assert short_workspace(path, home="", width=40) == path
    assert short_workspace(path, home="", width=24) == "…/acme/web-frontend"  # at a folder
    # a boundary that would give away more than a third of the room is not looked for
    long_name = "/srv/a-very-long-project-folder-name"
    assert short_workspace(long_name, home="", width=16) == "…ect-folder-name"
    assert len(short_workspace(path, home="", width=12)) <= 12
