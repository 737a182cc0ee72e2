"""The dispatch: each command runs from a module of `app.commands` of its own, the one import the
command line makes when it knows the command."""

from __future__ import annotations

import argparse

from app import cli


def test_each_command_names_a_module_with_an_entry() -> None:
    (commands,) = (
        action.choices
        for action in cli.build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    assert set(cli.COMMANDS) == {None, *commands}
    for name in set(cli.COMMANDS.values()):
        assert callable(cli.command_module(name).main), name
