"""The first minute with models (Pilot): the welcome of a new session, the local servers asked in the
background, and the model picker of `/model` (use one, save it as the default). Every local server
here is the test's own."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from app.tui.screens.model_picker import ConfirmDefault, ModelPicker
from app.tui.widgets.prompt_input import PromptInput
from app.tui.widgets.welcome import Welcome
from engine import paths
from engine.config import load_config
from engine.events import ModelBind
from engine.gateway.scripted import Reply
from engine.local_servers import SERVERS_ENV
from tests.local_model_server import ModelListServer
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_long_session import opened
from tests.waiting import until


async def send(app: ConsoleTestApp, pilot: Pilot[None], text: str) -> None:
    prompt = app.main.query_one(PromptInput)
    prompt.focus()
    prompt.load_text(text)
    await pilot.press("enter")
    await pilot.pause()


async def picker(app: ConsoleTestApp, pilot: Pilot[None]) -> ModelPicker:
    await send(app, pilot, "/model")
    await until(lambda: isinstance(app.screen, ModelPicker), "the picker opened", pilot=pilot)
    await pilot.pause()
    assert isinstance(app.screen, ModelPicker)
    return app.screen


def welcome_text(app: ConsoleTestApp) -> str:
    """The welcome's words as drawn, its frame and line breaks left out."""
    (welcome,) = app.main.query(Welcome)
    drawn = " ".join(line.text for line in welcome.render_lines(welcome.region.reset_offset))
    return " ".join(drawn.translate(str.maketrans("│╭╮╰╯─", "      ")).split())


async def test_a_new_session_is_welcomed_until_its_first_prompt(
    workspace: Path, data: Path
) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text="hello back")])
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app, pilot)
        shown = welcome_text(app)
        assert "scripted, the offline demo model: deterministic, no network" in shown
        assert "OPENAI_API_KEY" in shown
        assert "/model" in shown
        for key, what in (("F1", "help"), ("F4", "sessions"), ("/", "commands"), ("@", "attach")):
            assert f"{key} {what}" in shown
        await send(app, pilot, "hello")
        await app.live.when_idle()
        await pilot.pause()
        assert list(app.main.query(Welcome)) == []
        log = await app.live.read_log()
    stored = "\n".join(event.model_dump_json() for event in log)
    assert "Welcome" not in stored
    assert "offline demo model" not in stored


async def test_a_resumed_session_has_no_welcome(workspace: Path, data: Path) -> None:
    first = ConsoleTestApp(workspace, data, [Reply(text="hi")])
    async with first.run_test(size=(100, 30)) as pilot:
        await opened(first, pilot)
        await send(first, pilot, "hello")
        await first.live.when_idle()
        session_id = first.live.session_id
    resumed = ConsoleTestApp(workspace, data, [], session_id=session_id)
    async with resumed.run_test(size=(100, 30)) as pilot:
        await opened(resumed, pilot)
        assert list(resumed.main.query(Welcome)) == []


async def test_local_servers_asked_at_start_join_the_welcome_and_the_session(
    workspace: Path, data: Path
) -> None:
    with (
        ModelListServer(["qwen3:8b"]) as ollama,
        ModelListServer(["big-model"]) as later,
    ):
        servers = [ollama.server("ollama"), later.server("vllm", at_start=False)]
        app = ConsoleTestApp(workspace, data, [], local_servers=servers)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(app, pilot)
            await until(lambda: "ollama/qwen3:8b" in welcome_text(app), "found shown", pilot=pilot)
            assert "nothing is sent anywhere until you do" in welcome_text(app)
            assert "ollama/qwen3:8b" in app.live.model_names()
            assert app.live.model.name == "scripted"  # nothing runs there until picked
            assert later.paths == []  # asked only when the picker opens
            shown = await picker(app, pilot)
            await until(lambda: later.paths == ["/v1/models"], "the picker asked all", pilot=pilot)
            await until(lambda: "vllm/big-model" in _rows(shown), "listed", pilot=pilot)
            assert f"vllm at 127.0.0.1:{later.port}: 1 model" in _label(shown, "#servers")


async def test_a_default_local_model_is_named_in_the_welcome_once_found(
    workspace: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = workspace.parent / "user.toml"
    user.write_text('default_model = "ollama/qwen3:8b"\n', encoding="utf-8")
    with ModelListServer(["qwen3:8b"]) as ollama:
        monkeypatch.setenv(SERVERS_ENV, f"ollama={ollama.port}")
        config = load_config(workspace, user_file=user)
        app = ConsoleTestApp(workspace, data, [], config=config, local_servers=[ollama.server()])
        async with app.run_test(size=(120, 30)) as pilot:
            await opened(app, pilot)
            assert app.live.model.name == "ollama/qwen3:8b"
            await until(lambda: "from ollama at" in welcome_text(app), "named", pilot=pilot)
            shown = welcome_text(app)
            assert (
                f"ollama/qwen3:8b · openai qwen3:8b · from ollama at 127.0.0.1:{ollama.port}"
                in shown
            )
            assert "offline demo model" not in shown


async def test_the_picker_lists_every_entry_and_enter_switches_from_the_next_turn(
    workspace: Path, data: Path
) -> None:
    with ModelListServer(["qwen3:8b"]) as ollama:
        app = ConsoleTestApp(
            workspace, data, [Reply(text="on the new one")], local_servers=[ollama.server()]
        )
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(app, pilot)
            shown = await picker(app, pilot)
            await until(lambda: "ollama/qwen3:8b" in _rows(shown), "listed", pilot=pilot)
            table = shown.query_one(DataTable)
            assert [str(c) for c in table.get_row_at(0)[:2]] == ["●", "scripted"]
            assert [str(c) for c in table.get_row_at(1)] == [
                "",
                "ollama/qwen3:8b",
                "openai",
                "?",
                "restricted",
                f"ollama at 127.0.0.1:{ollama.port}",
            ]
            await pilot.press("down")
            await pilot.press("enter")
            await until(lambda: not isinstance(app.screen, ModelPicker), "closed", pilot=pilot)
            await until(
                lambda: app.live.model.next_name == "ollama/qwen3:8b", "switched", pilot=pilot
            )
            binds = [e.data.model for e in app.live.log if isinstance(e.data, ModelBind)]
            assert binds == ["scripted", "ollama/qwen3:8b"]


async def test_escape_closes_the_picker_and_changes_nothing(workspace: Path, data: Path) -> None:
    app = ConsoleTestApp(workspace, data, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(app, pilot)
        await picker(app, pilot)
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, ModelPicker), "closed", pilot=pilot)
        assert app.live.model.next_name == "scripted"


async def test_s_saves_the_default_after_one_confirmation(
    workspace: Path, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user" / "config.toml"
    user.parent.mkdir()
    user.write_text("# mine\n[context]\nchar_cap = 90000\n", encoding="utf-8")
    monkeypatch.setenv(paths.CONFIG_ENV, str(user))
    with ModelListServer(["qwen3:8b"]) as ollama:
        app = ConsoleTestApp(workspace, data, [], local_servers=[ollama.server()])
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(app, pilot)
            shown = await picker(app, pilot)
            await until(lambda: "ollama/qwen3:8b" in _rows(shown), "listed", pilot=pilot)
            await pilot.press("down", "s")
            await until(lambda: isinstance(app.screen, ConfirmDefault), "asked", pilot=pilot)
            await pilot.press("n")  # not saved: the picker is still there
            await pilot.pause()
            assert isinstance(app.screen, ModelPicker)
            assert user.read_text(encoding="utf-8") == "# mine\n[context]\nchar_cap = 90000\n"
            await pilot.press("s")
            await until(lambda: isinstance(app.screen, ConfirmDefault), "asked again", pilot=pilot)
            await pilot.press("y")
            await until(
                lambda: app.live.model.next_name == "ollama/qwen3:8b", "switched", pilot=pilot
            )
    assert user.read_text(encoding="utf-8") == (
        '# mine\ndefault_model = "ollama/qwen3:8b"\n\n[context]\nchar_cap = 90000\n'
    )


def _rows(shown: ModelPicker) -> list[str]:
    table = shown.query_one(DataTable)
    return [str(table.get_row_at(row)[1]).split(" · ")[0] for row in range(table.row_count)]


def _label(shown: ModelPicker, selector: str) -> str:
    return str(shown.query_one(selector, Static).render())
