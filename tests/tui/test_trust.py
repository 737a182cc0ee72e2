"""The trust dialog: a project config with settings that need trust asks before the session opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.tui.screens.main import MainScreen
from app.tui.screens.trust import TrustDialog
from engine.config import load_config_report
from tests.tui.conftest import ConsoleTestApp

PROJECT = """
[models.project_only]
provider = "scripted"
"""


@pytest.fixture
def untrusted(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ConsoleTestApp:
    monkeypatch.setenv("TRELLIS_HOME", str(tmp_path / "home"))
    user = tmp_path / "user.toml"
    user.write_text("", encoding="utf-8")
    monkeypatch.setenv("TRELLIS_CONFIG", str(user))
    (workspace / ".trellis").mkdir()
    (workspace / ".trellis" / "config.toml").write_text(PROJECT, encoding="utf-8")
    loaded = load_config_report(workspace)
    assert loaded.project is not None
    assert [s.key for s in loaded.project.skipped] == ["models.project_only"]
    return ConsoleTestApp(
        workspace, tmp_path / "data", [], config=loaded.config, project=loaded.project
    )


async def _answer(app: ConsoleTestApp, key: str) -> None:
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(500):
            if isinstance(app.screen, TrustDialog):
                break
            await pilot.pause(0.01)
        assert isinstance(app.screen, TrustDialog)
        assert app.agent is None  # nothing opens before the answer
        await pilot.press(key)
        for _ in range(500):
            if isinstance(app.screen, MainScreen):
                break
            await pilot.pause(0.01)
        assert isinstance(app.screen, MainScreen)


async def test_continue_without_the_skipped_settings(
    untrusted: ConsoleTestApp, workspace: Path
) -> None:
    await _answer(untrusted, "c")
    assert "project_only" not in untrusted.live.model_names()
    loaded = load_config_report(workspace).project
    assert loaded is not None
    assert not loaded.trusted  # nothing recorded


async def test_trusting_applies_the_whole_file_and_records_it(
    untrusted: ConsoleTestApp, workspace: Path
) -> None:
    await _answer(untrusted, "t")
    assert "project_only" in untrusted.live.model_names()
    digest = load_config_report(workspace).project
    assert digest is not None
    assert digest.trusted  # recorded: the next load applies the whole file
