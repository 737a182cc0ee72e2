"""Models without a config file: the entries a provider key in the environment makes, those a local
server serves, where each comes from, a `default_model` that names one, and the untrusted project's
say in it. Every local server here is the test's own."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from engine import paths
from engine.agent import open_agent
from engine.config import Config, ConfigError, load_config, load_config_report
from engine.gateway.scripted import ScriptedGateway
from engine.local_servers import SERVERS_ENV, LocalServer, ask
from engine.model_catalog import (
    PROVIDER_DEFAULTS,
    choices_table,
    environment_models,
    local_models,
    model_choices,
    provider_of,
    with_named_local_models,
)
from engine.privacy import PrivacyClass
from engine.store.sqlite.store import SQLiteStore
from tests.local_model_server import ModelListServer, closed_port


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(paths.CONFIG_ENV, raising=False)
    monkeypatch.setenv(paths.HOME_ENV, str(tmp_path / "home"))
    monkeypatch.setattr(
        platformdirs, "user_config_dir", lambda app: str(tmp_path / "platform-config" / app)
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def project(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "repo"
    write(root / ".trellis" / "config.toml", text)
    return root


# --- provider keys in the environment -------------------------------------------------------------


def test_each_provider_key_makes_its_entry_with_the_table_s_defaults() -> None:
    found = environment_models(
        {"OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "a-1", "GOOGLE_API_KEY": "g-1"}
    )
    assert list(found) == ["openai", "anthropic", "gemini"]
    for provider, detected in found.items():
        defaults = PROVIDER_DEFAULTS[provider]  # type: ignore[index]
        entry = detected.entry
        assert (entry.provider, entry.model) == (provider, defaults.model)
        assert entry.context_window == defaults.context_window
        assert entry.effective_egress() is PrivacyClass.internal
        assert entry.api_key() is None  # the variable is named; the key is never copied
    assert found["openai"].entry.api_key_env == "OPENAI_API_KEY"
    assert found["gemini"].entry.api_key_env == "GOOGLE_API_KEY"
    assert found["openai"].origin == "environment OPENAI_API_KEY"
    assert found["gemini"].origin == "environment GOOGLE_API_KEY"


def test_gemini_s_own_variable_comes_first_and_an_empty_key_is_none() -> None:
    found = environment_models({"GEMINI_API_KEY": "g", "GOOGLE_API_KEY": "h", "OPENAI_API_KEY": ""})
    assert list(found) == ["gemini"]
    assert found["gemini"].entry.api_key_env == "GEMINI_API_KEY"
    assert environment_models({}) == {}


def test_openai_s_base_url_moves_the_endpoint() -> None:
    found = environment_models(
        {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "https://llm.example.com/v1"}
    )
    assert found["openai"].entry.base_url == "https://llm.example.com/v1"
    assert found["openai"].origin == "environment OPENAI_API_KEY, OPENAI_BASE_URL"
    assert environment_models({"OPENAI_BASE_URL": "https://x/v1"}) == {}


def test_a_detected_entry_is_below_the_user_s_entry_of_its_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-test")
    user = write(
        tmp_path / "user.toml",
        '[models.openai]\nprovider = "openai"\nmodel = "my-model"\n',
    )
    config = load_config(tmp_path, user_file=user)
    assert config.default_model == "scripted"  # nothing runs elsewhere until it is picked
    assert list(config.models) == ["scripted", "openai", "anthropic"]
    assert config.models["openai"].model == "my-model"
    assert config.models["openai"].context_window is None  # whole: no detected field merged
    assert [(c.name, c.origin, c.detected) for c in model_choices(config)] == [
        ("scripted", "built in", False),
        ("openai", "user config", False),
        ("anthropic", "environment ANTHROPIC_API_KEY", True),
    ]


def test_with_no_file_a_key_still_makes_its_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-test")
    config = load_config(Path("/nonexistent-workspace"))
    assert list(config.models) == ["scripted", "anthropic"]
    assert config.default_model == "scripted"
    assert config.origin("anthropic") == "environment ANTHROPIC_API_KEY"


def test_a_saved_default_may_name_a_detected_entry(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    user = write(tmp_path / "user.toml", 'default_model = "gemini"\n')
    with pytest.raises(ConfigError, match="'gemini' names no model entry"):
        load_config(tmp_path, user_file=user)  # no key: nothing detected
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")
    config = load_config(tmp_path, user_file=user)
    assert config.model(None)[0] == "gemini"
    assert config.model(None)[1].model == PROVIDER_DEFAULTS["gemini"].model


def test_an_unknown_default_lists_what_was_detected(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    user = write(tmp_path / "user.toml", 'default_model = "nope"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, user_file=user)
    assert caught.value.key == "default_model"
    assert "configured: scripted; detected: openai" in caught.value.problem


# --- local servers --------------------------------------------------------------------------------


def test_a_default_may_name_a_local_server_s_model_before_it_is_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SERVERS_ENV, "ollama=11434")
    user = write(tmp_path / "user.toml", 'default_model = "ollama/qwen3:8b"\n')
    config = load_config(tmp_path, user_file=user)
    assert config.default_model == "ollama/qwen3:8b"
    assert "ollama/qwen3:8b" not in config.models  # asked for when a session opens
    other = write(tmp_path / "other.toml", 'default_model = "nosuch/qwen3:8b"\n')
    with pytest.raises(ConfigError, match=r"local servers \(SERVER/MODEL\): ollama"):
        load_config(tmp_path, user_file=other)
    off = write(
        tmp_path / "off.toml", 'default_model = "ollama/qwen3:8b"\n[discovery]\nlocal = false\n'
    )
    with pytest.raises(ConfigError, match=r"local discovery is off"):
        load_config(tmp_path, user_file=off)


async def test_a_named_local_model_is_asked_of_its_server() -> None:
    with ModelListServer(["qwen3:8b", "llama3.2"]) as running:
        server = running.server()
        config = await with_named_local_models(Config(), ["ollama/qwen3:8b"], [server])
    assert list(config.models) == ["scripted", "ollama/qwen3:8b", "ollama/llama3.2"]
    entry = config.models["ollama/qwen3:8b"]
    assert (entry.provider, entry.model, entry.base_url) == ("openai", "qwen3:8b", server.base_url)
    assert entry.effective_egress() is PrivacyClass.restricted  # loopback
    assert config.origin("ollama/qwen3:8b") == f"ollama at 127.0.0.1:{running.port}"
    assert config.detected("ollama/llama3.2")


async def test_a_named_local_model_that_is_not_served_names_what_was_asked() -> None:
    with ModelListServer(["llama3.2"]) as running, pytest.raises(ConfigError) as missing:
        await with_named_local_models(Config(), ["ollama/qwen3:8b"], [running.server()])
    assert str(missing.value) == (
        f"model 'ollama/qwen3:8b': asked ollama at http://127.0.0.1:{running.port}/v1/models: "
        "it serves no 'qwen3:8b' (it serves: llama3.2)"
    )
    port = closed_port()
    server = LocalServer(name="lmstudio", label="LM Studio", port=port)
    with pytest.raises(ConfigError) as down:
        await with_named_local_models(Config(), ["lmstudio/x"], [server])
    assert f"asked LM Studio at http://127.0.0.1:{port}/v1/models: not running" in str(down.value)


async def test_nothing_is_asked_for_a_name_that_is_known_or_no_server_s() -> None:
    servers = [LocalServer(name="ollama", label="Ollama", port=closed_port())]
    config = Config()
    assert await with_named_local_models(config, ["scripted", "other", None], servers) is config


async def test_a_new_session_opens_on_a_default_local_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    user = write(tmp_path / "user.toml", 'default_model = "ollama/qwen3:8b"\n')
    with ModelListServer(["qwen3:8b"]) as running:
        monkeypatch.setenv(SERVERS_ENV, f"ollama={running.port}")
        config = load_config(tmp_path, user_file=user)
        agent = await open_agent(config=config, cwd=tmp_path)
        try:
            assert (agent.model.name, agent.model.model_id) == ("ollama/qwen3:8b", "qwen3:8b")
            assert agent.model.egress is PrivacyClass.restricted
            assert "ollama/qwen3:8b" in agent.model_names()
        finally:
            await agent.aclose()


async def test_a_default_local_model_that_is_gone_stops_the_opening(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    port = closed_port()
    monkeypatch.setenv(SERVERS_ENV, f"ollama={port}")
    user = write(tmp_path / "user.toml", 'default_model = "ollama/qwen3:8b"\n')
    config = load_config(tmp_path, user_file=user)
    with pytest.raises(ConfigError, match=f"asked Ollama at http://127.0.0.1:{port}/v1/models"):
        await open_agent(config=config, cwd=tmp_path)


async def test_a_session_bound_to_a_local_model_resumes_on_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    user = write(tmp_path / "user.toml", 'default_model = "ollama/qwen3:8b"\n')
    async with SQLiteStore(tmp_path / "sessions.sqlite") as store:
        with ModelListServer(["qwen3:8b"]) as running:
            monkeypatch.setenv(SERVERS_ENV, f"ollama={running.port}")
            config = load_config(tmp_path, user_file=user)
            first = await open_agent(
                config=config, cwd=tmp_path, store=store, gateway=ScriptedGateway()
            )
            first.send("hello")
            await first.when_idle()
            await first.aclose()
            plain = load_config(tmp_path)  # a default of its own: the stored binding decides
            resumed = await open_agent(
                config=plain, store=store, session_id=first.session_id, cwd=tmp_path
            )
            assert resumed.model.name == "ollama/qwen3:8b"
            await resumed.aclose()
        with pytest.raises(ConfigError, match=r"model 'ollama/qwen3:8b': asked Ollama at"):
            await open_agent(config=plain, store=store, session_id=first.session_id, cwd=tmp_path)


async def test_models_found_after_opening_may_be_switched_to(tmp_path: Path) -> None:
    agent = await open_agent(
        config=Config(), cwd=tmp_path, gateway=ScriptedGateway(), local_servers=()
    )
    try:
        with ModelListServer(["qwen3:8b"]) as running:
            found = local_models(await ask([running.server()]))
        with pytest.raises(ConfigError):
            agent.request_model("ollama/qwen3:8b")
        agent.add_models(found)
        assert [c.name for c in agent.model_choices()] == ["scripted", "ollama/qwen3:8b"]
        assert agent.request_model("ollama/qwen3:8b").model == "ollama/qwen3:8b"
    finally:
        await agent.aclose()


def test_the_listing_marks_one_and_aligns_the_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk")
    config = load_config(Path("/nonexistent-workspace"))
    lines = choices_table(model_choices(config), marked="openai")
    assert lines == [
        "  name      provider  model        window     egress      from",
        "  scripted  scripted  scripted     -          restricted  built in",
        "* openai    openai    gpt-6.1-sol  1,050,000  internal    environment OPENAI_API_KEY",
    ]


# --- the untrusted project ------------------------------------------------------------------------


def test_an_untrusted_project_may_pick_a_local_default_but_not_a_provider(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A cloned repository must not send the workspace to a provider the user's key reaches:
    nothing is sent anywhere until the user picks a model. A local server's model stays here."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a")
    monkeypatch.setenv(SERVERS_ENV, "ollama=11434")
    user = write(tmp_path / "user.toml", "")
    remote = project(tmp_path, 'default_model = "anthropic"\n')
    loaded = load_config_report(remote, user_file=user)
    assert loaded.config.default_model == "scripted"
    assert loaded.project is not None
    assert [s.key for s in loaded.project.skipped] == ["default_model"]
    assert "where your data goes is yours to pick" in loaded.project.skipped[0].reason
    assert load_config(remote, user_file=user, trust_project=True).default_model == "anthropic"
    chosen = write(tmp_path / "chosen.toml", 'default_model = "anthropic"\n')
    # the user picked it
    assert load_config(tmp_path, user_file=chosen).default_model == "anthropic"
    local = project(tmp_path, 'default_model = "ollama/qwen3:8b"\n')
    assert load_config(local, user_file=user).default_model == "ollama/qwen3:8b"
    unknown = project(tmp_path, 'default_model = "openai"\n')  # no OPENAI_API_KEY here
    loaded = load_config_report(unknown, user_file=user)
    assert loaded.config.default_model == "scripted"
    assert loaded.project is not None
    assert [(s.key, s.reason) for s in loaded.project.skipped] == [
        ("default_model", "names a model entry you did not define and that was not detected")
    ]


def test_an_untrusted_project_may_turn_discovery_off_but_not_on(tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", "[discovery]\nlocal = false\n")
    on = project(tmp_path, "[discovery]\nlocal = true\n")
    loaded = load_config_report(on, user_file=user)
    assert loaded.config.discovery.local is False
    assert loaded.project is not None
    assert [s.key for s in loaded.project.skipped] == ["discovery.local"]
    off = project(tmp_path, "[discovery]\nlocal = false\n")
    assert load_config(off, user_file=write(tmp_path / "u2.toml", "")).discovery.local is False


def test_a_stored_bind_s_provider_is_its_entry_s_or_a_local_server_s() -> None:
    config = Config()
    servers = [LocalServer(name="ollama", label="Ollama", port=11434)]
    assert provider_of(config, "scripted", servers) == "scripted"
    assert provider_of(config, "ollama/qwen3:8b", servers) == "openai"
    assert provider_of(config, "lmstudio/qwen3", servers) is None  # no such server named
    assert provider_of(config, "ollama/", servers) is None
    assert provider_of(config, "gone", servers) is None
