"""Saving the default model: only `default_model` is written to the user config, the rest of the file
(comments, order, tables, every other key) stays as it was, and a file that cannot be edited is
left alone with an error that names it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from engine import paths
from engine.config import ConfigError, load_config
from engine.config_writer import save_default_model

COMMENTED = """\
# my Trellis settings
theme_note = "kept"   # not a Trellis key: validation would say so, saving must not care

[models.local]   # the box under the desk
provider = "openai"
base_url = "http://127.0.0.1:11434/v1"  # ollama
model = "qwen3:8b"

# limits
[context]
char_cap = 50000
"""


def test_a_new_default_goes_above_the_tables_and_nothing_else_changes(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text(COMMENTED, encoding="utf-8")
    assert save_default_model("ollama/qwen3:8b", file) == file
    lines = file.read_text(encoding="utf-8").splitlines()
    expected = COMMENTED.splitlines()
    assert lines == [*expected[:2], 'default_model = "ollama/qwen3:8b"', *expected[2:]]


def test_an_existing_default_is_replaced_in_place_with_its_comment(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text(
        '# top\ndefault_model = "local"  # chosen by hand\n\n[models.local]\nprovider = "scripted"\n',
        encoding="utf-8",
    )
    save_default_model("openai", file)
    assert file.read_text(encoding="utf-8") == (
        '# top\ndefault_model = "openai"  # chosen by hand\n\n[models.local]\nprovider = "scripted"\n'
    )


def test_a_missing_file_and_its_directory_are_created(tmp_path: Path) -> None:
    file = tmp_path / "not" / "yet" / "config.toml"
    save_default_model('odd "name"', file)
    assert file.read_text(encoding="utf-8") == 'default_model = "odd \\"name\\""\n'


def test_the_user_config_is_the_default_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "named.toml"
    monkeypatch.setenv(paths.CONFIG_ENV, str(file))
    assert save_default_model("scripted") == file
    assert load_config(tmp_path).default_model == "scripted"


def test_the_saved_default_is_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "config.toml"
    file.write_text(COMMENTED.replace('theme_note = "kept"', "# no stray key"), encoding="utf-8")
    save_default_model("local", file)
    assert load_config(tmp_path, user_file=file).default_model == "local"


def test_invalid_toml_is_left_as_it_is(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text("[models\nbroken", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        save_default_model("x", file)
    assert caught.value.file == file
    assert "invalid TOML, default_model not saved" in caught.value.problem
    assert file.read_text(encoding="utf-8") == "[models\nbroken"


def test_the_file_keeps_its_mode_and_a_link_keeps_pointing_at_it(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "trellis.toml"
    target.parent.mkdir()
    target.write_text("# secret-ish\n", encoding="utf-8")
    target.chmod(0o600)
    link = tmp_path / "config.toml"
    link.symlink_to(target)
    assert save_default_model("scripted", link) == target
    assert link.is_symlink()
    assert target.read_text(encoding="utf-8") == '# secret-ish\ndefault_model = "scripted"\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["trellis.toml"]  # no temporary left


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_an_unwritable_place_is_an_error_naming_the_file(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    file = locked / "config.toml"
    file.write_text("# mine\n", encoding="utf-8")
    locked.chmod(0o500)
    try:
        with pytest.raises(ConfigError) as caught:
            save_default_model("x", file)
    finally:
        locked.chmod(0o700)
    assert caught.value.file == file
    assert caught.value.problem.startswith("cannot save default_model: ")
    assert file.read_text(encoding="utf-8") == "# mine\n"


def test_a_file_where_its_directory_should_be_is_an_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "config").write_text("not a directory", encoding="utf-8")
    file = tmp_path / "config" / "config.toml"
    with pytest.raises(ConfigError) as caught:
        save_default_model("x", file)
    assert caught.value.file == file
    assert "default_model" in caught.value.problem
    assert (tmp_path / "config").read_text(encoding="utf-8") == "not a directory"
