"""A bad instruction file path is a config error naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import ConfigError, load_config


@pytest.mark.parametrize("name", ["/etc/passwd", "../outside.md", "docs/../../x.md", ""])
def test_an_instruction_file_outside_the_workspace_is_a_config_error(
    tmp_path: Path, name: str
) -> None:
    user = tmp_path / "user.toml"
    user.write_text(f'[context]\ninstruction_files = ["AGENTS.md", "{name}"]\n')
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, user_file=user)
    assert raised.value.file == user
    assert raised.value.key == "context.instruction_files[1]"
    assert "inside the workspace" in raised.value.problem


def test_a_project_instruction_file_is_blamed_on_the_project(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[context]\ninstruction_files = ["AGENTS.md"]\n')
    project = tmp_path / "repo"
    (project / ".trellis").mkdir(parents=True)
    (project / ".trellis" / "config.toml").write_text(
        '[context]\ninstruction_files = ["/abs.md"]\n'
    )
    with pytest.raises(ConfigError) as raised:
        load_config(project, user_file=user, trust_project=True)
    assert raised.value.file == project / ".trellis" / "config.toml"


def test_nested_relative_instruction_files_are_fine(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[context]\ninstruction_files = ["docs/AGENTS.md", "./TRELLIS.md"]\n')
    config = load_config(tmp_path, user_file=user)
    assert config.context.instruction_files == ["docs/AGENTS.md", "./TRELLIS.md"]


def test_a_duplicate_mcp_server_names_the_entry(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text(
        '[[mcp_servers]]\nname = "fs"\ncommand = "a"\n'
        '[[mcp_servers]]\nname = "git"\ncommand = "b"\n'
        '[[mcp_servers]]\nname = "fs"\ncommand = "c"\n'
    )
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, user_file=user)
    assert raised.value.file == user
    assert raised.value.key == "mcp_servers[2].name"
    assert "'fs'" in raised.value.problem
