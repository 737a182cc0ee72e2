"""Config: the two layers and how they merge, every default, and an error for each kind of mistake."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from engine import paths
from engine.config import (
    DEFAULT_SYSTEM_PROMPT,
    Config,
    ConfigError,
    ModelEntry,
    config_files,
    load_config,
)
from engine.privacy import PrivacyClass


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test may see the real user's config or data directory."""
    monkeypatch.delenv(paths.CONFIG_ENV, raising=False)
    monkeypatch.delenv(paths.HOME_ENV, raising=False)
    monkeypatch.setattr(
        platformdirs, "user_config_dir", lambda app: str(tmp_path / "platform-config" / app)
    )
    monkeypatch.setattr(
        platformdirs, "user_data_dir", lambda app: str(tmp_path / "platform-data" / app)
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def project(tmp_path: Path, text: str) -> Path:
    """A project directory whose `.trellis/config.toml` holds `text`; returns the project root."""
    root = tmp_path / "project"
    write(root / ".trellis" / "config.toml", text)
    return root


def load_error(
    cwd: Path, user_file: Path | None = None, *, trust_project: bool = False
) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(cwd, user_file=user_file, trust_project=trust_project)
    return caught.value


# --- no configuration -----------------------------------------------------------------------------


def test_without_any_file_the_scripted_model_is_the_default(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    name, entry = config.model(None)
    assert name == "scripted"
    assert entry.provider == "scripted"
    assert entry.script == ""
    assert entry.effective_egress() is PrivacyClass.restricted
    assert list(config.models) == ["scripted"]


def test_every_section_has_its_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == Config()
    assert config.context.char_cap is None  # derived from the model's window, else 96,000
    assert config.context.turn_window == 20
    assert config.context.instruction_files == ["AGENTS.md", "TRELLIS.md"]
    assert config.context.instruction_max_bytes == 32_768
    assert config.context.secret_patterns == [".env*", "*.pem", "*.key", "id_*", "*credentials*"]
    assert config.context.shell_class == "internal"
    assert config.context.shell_privacy_class() is PrivacyClass.internal
    assert config.context.system_prompt == DEFAULT_SYSTEM_PROMPT
    assert config.mcp_servers == []
    assert config.areas == []
    assert (config.serve.host, config.serve.port) == ("127.0.0.1", 8765)
    assert config.serve.allowed_origins == []
    assert config.serve.token_env == "TRELLIS_SERVE_TOKEN"
    assert config.serve.roots == []
    assert (config.agent.max_steps, config.agent.tool_timeout) == (50, 120.0)
    assert config.agent.max_tool_output == 100_000
    entry = ModelEntry(provider="openai")
    assert (entry.timeout, entry.max_retries) == (120.0, 3)
    assert (entry.first_event_timeout, entry.idle_timeout, entry.request_timeout) == (
        180.0,
        60.0,
        900.0,
    )
    assert (entry.context_window, entry.generation_window, entry.egress) == (None, None, None)
    checkpoints = config.checkpoints
    assert (checkpoints.enabled, checkpoints.exclude) == (True, [])
    assert (checkpoints.max_file_bytes, checkpoints.max_files) == (1024 * 1024, 20_000)
    assert checkpoints.max_bytes == 512 * 1024 * 1024


def test_files_that_set_nothing_give_the_validated_defaults(tmp_path: Path) -> None:
    """With nothing configured the defaults are constructed, not validated (start time): they
    must be exactly what validating an empty table gives, down to each entry's set fields."""
    user = write(tmp_path / "user.toml", "# nothing yet\n")
    workspace = project(tmp_path, "")
    loaded = load_config(workspace, user_file=user, trust_project=True)
    validated = Config.model_validate({})
    assert loaded == validated
    assert loaded.model_dump() == validated.model_dump()
    assert repr(loaded) == repr(validated)
    for section in ("context", "serve", "agent"):
        assert getattr(loaded, section) == getattr(validated, section)
        assert getattr(loaded, section).model_fields_set == set()
    assert loaded.models["scripted"].model_fields_set == {"provider"}


def test_a_file_that_sets_a_key_is_validated(tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", "[agent]\nmax_steps = 0\n")
    error = load_error(tmp_path, user)
    assert (error.file, error.key) == (user, "agent.max_steps")


# --- where the files are --------------------------------------------------------------------------


def test_user_file_defaults_to_the_platform_config_dir(tmp_path: Path) -> None:
    user = write(tmp_path / "platform-config" / "trellis" / "config.toml", "[agent]\nmax_steps = 7")
    assert paths.user_config_file() == user
    assert load_config(tmp_path).agent.max_steps == 7


def test_trellis_config_names_the_user_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = write(tmp_path / "elsewhere.toml", "[agent]\nmax_steps = 9")
    monkeypatch.setenv(paths.CONFIG_ENV, str(user))
    assert load_config(tmp_path).agent.max_steps == 9


def test_trellis_config_naming_a_missing_file_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing.toml"
    monkeypatch.setenv(paths.CONFIG_ENV, str(missing))
    error = load_error(tmp_path)
    assert error.file == missing
    assert paths.CONFIG_ENV in str(error)


def test_an_explicit_user_file_that_does_not_exist_is_no_layer(tmp_path: Path) -> None:
    assert config_files(tmp_path, user_file=tmp_path / "absent.toml") == []
    assert load_config(tmp_path, user_file=tmp_path / "absent.toml") == Config()


def test_project_config_is_found_from_a_nested_directory(tmp_path: Path) -> None:
    root = project(tmp_path, "[agent]\nmax_steps = 3")
    nested = root / "src" / "deep"
    nested.mkdir(parents=True)
    assert paths.find_project_dir(nested) == root.resolve()
    assert config_files(nested) == [(root / ".trellis" / "config.toml").resolve()]
    assert load_config(nested).agent.max_steps == 3


def test_a_project_without_config_file_adds_no_layer(tmp_path: Path) -> None:
    (tmp_path / "p" / ".trellis").mkdir(parents=True)
    assert paths.project_config_file(tmp_path / "p") is None
    assert config_files(tmp_path / "p") == []


def test_data_dir_is_the_platform_one_unless_trellis_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert paths.data_dir() == tmp_path / "platform-data" / "trellis"
    monkeypatch.setenv(paths.HOME_ENV, str(tmp_path / "home"))
    assert paths.data_dir() == tmp_path / "home"
    assert paths.sessions_db_path() == tmp_path / "home" / "sessions.sqlite"


# --- layering -------------------------------------------------------------------------------------


USER_TOML = """
default_model = "local"

[models.local]
provider = "openai"
base_url = "http://127.0.0.1:11434/v1"
model = "qwen3:8b"
api_key_env = "OLLAMA_API_KEY"
context_window = 32768

[models.cloud]
provider = "anthropic"
model = "claude"

[context]
char_cap = 50000
turn_window = 5

[[areas]]
path = "user_areas:Notes"

[[mcp_servers]]
name = "fs"
command = "mcp-fs"
args = ["--root", "/"]
"""

PROJECT_TOML = """
[models.local]
model = "llama3"
egress = "private"

[context]
turn_window = 8

[[areas]]
path = "project.areas:Board"
args = { columns = 3 }
"""


def test_project_wins_key_by_key(tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", USER_TOML)
    root = project(tmp_path, PROJECT_TOML)
    config = load_config(root, user_file=user, trust_project=True)

    assert config.default_model == "local"
    local = config.models["local"]
    # the entry merges per key: the project changed model and egress, the rest is the user's
    assert local.provider == "openai"
    assert local.base_url == "http://127.0.0.1:11434/v1"
    assert local.model == "llama3"
    assert local.context_window == 32768
    assert local.egress == "private"
    assert config.models["cloud"].provider == "anthropic"
    assert set(config.models) == {"scripted", "local", "cloud"}
    # tables merge per key
    assert (config.context.char_cap, config.context.turn_window) == (50000, 8)
    # arrays are replaced by the higher layer, not appended to
    assert [(a.path, a.args) for a in config.areas] == [("project.areas:Board", {"columns": 3})]
    # an array the project does not mention stays the user's
    assert [(s.name, s.command, s.args) for s in config.mcp_servers] == [
        ("fs", "mcp-fs", ["--root", "/"])
    ]


def test_user_layer_alone(tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", USER_TOML)
    config = load_config(tmp_path, user_file=user)
    assert config.model(None)[0] == "local"
    assert config.models["local"].model == "qwen3:8b"
    assert [a.path for a in config.areas] == ["user_areas:Notes"]


def test_builtin_scripted_entry_can_be_overridden_in_part(tmp_path: Path) -> None:
    user = write(tmp_path / "conf" / "user.toml", '[models.scripted]\nscript = "replies.json"\n')
    entry = load_config(tmp_path, user_file=user).models["scripted"]
    assert entry.provider == "scripted"
    # a relative script path is relative to the file that names it
    assert entry.script == str(tmp_path / "conf" / "replies.json")


def test_builtin_scripted_entry_can_be_replaced(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", '[models.scripted]\nprovider = "openai"\nmodel = "m"\n')
    assert load_config(tmp_path, user_file=user).models["scripted"].provider == "openai"


def test_model_lookup_by_name_and_unknown_name() -> None:
    config = Config.model_validate({"models": {"b": {"provider": "gemini"}}})
    assert config.model("b") == ("b", config.models["b"])
    with pytest.raises(ConfigError, match=r"unknown model 'x'; configured: b, scripted"):
        config.model("x")


# --- endpoint facts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("http://127.0.0.1:11434/v1", PrivacyClass.restricted),
        ("http://127.8.9.10/v1", PrivacyClass.restricted),
        ("http://localhost:8080", PrivacyClass.restricted),
        ("http://[::1]:8000/v1", PrivacyClass.restricted),
        ("https://api.openai.com/v1", PrivacyClass.internal),
        ("http://192.168.1.5:8000", PrivacyClass.internal),
        ("", PrivacyClass.internal),
    ],
)
def test_default_egress_by_endpoint(base_url: str, expected: PrivacyClass) -> None:
    assert ModelEntry(provider="openai", base_url=base_url).effective_egress() is expected


def test_declared_egress_wins() -> None:
    entry = ModelEntry(provider="openai", base_url="http://127.0.0.1", egress="public")
    assert entry.effective_egress() is PrivacyClass.public
    assert ModelEntry(provider="scripted", egress="internal").effective_egress() is (
        PrivacyClass.internal
    )


def test_api_key_comes_from_the_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = ModelEntry(provider="openai", api_key_env="TRELLIS_TEST_KEY")
    monkeypatch.delenv("TRELLIS_TEST_KEY", raising=False)
    assert entry.api_key() is None
    monkeypatch.setenv("TRELLIS_TEST_KEY", "sk-test")
    assert entry.api_key() == "sk-test"
    assert "sk-test" not in entry.model_dump_json()
    assert ModelEntry(provider="openai").api_key() is None


def test_serve_token_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRELLIS_SERVE_TOKEN", "secret")
    assert Config().serve.token() == "secret"
    monkeypatch.delenv("TRELLIS_SERVE_TOKEN")
    assert Config().serve.token() is None


# --- errors ---------------------------------------------------------------------------------------


def test_invalid_toml_names_the_file_line_and_column(tmp_path: Path) -> None:
    root = project(tmp_path, "[context]\nchar_cap = \n")
    error = load_error(root)
    assert error.file == root / ".trellis" / "config.toml"
    assert "invalid TOML" in str(error)
    assert "line 2, column" in str(error)
    assert str(error.file) in str(error)


def test_non_utf8_file_is_an_error(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_bytes(b'default_model = "\xff"\n')
    error = load_error(tmp_path, user)
    assert error.file == user
    assert "UTF-8" in str(error)


def test_wrong_type_names_file_key_and_value(tmp_path: Path) -> None:
    root = project(tmp_path, '[models.local]\nprovider = "openai"\ncontext_window = "big"\n')
    error = load_error(root, trust_project=True)
    assert error.file == root / ".trellis" / "config.toml"
    assert error.key == "models.local.context_window"
    assert "valid integer" in error.problem
    assert "'big'" in error.problem
    assert str(error).startswith(f"{error.file}: models.local.context_window: ")


def test_numbers_as_strings_are_wrong_types(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", '[serve]\nport = "8080"\n')
    assert load_error(tmp_path, user).key == "serve.port"


def test_unknown_top_level_key(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", 'defualt_model = "x"\n')
    error = load_error(tmp_path, user)
    assert (error.file, error.key) == (user, "defualt_model")
    assert "unknown key" in error.problem
    assert "default_model" in error.problem  # the known keys are listed


def test_unknown_nested_key_lists_the_known_ones(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", "[context]\nchar_kap = 5\n")
    error = load_error(tmp_path, user)
    assert error.key == "context.char_kap"
    assert "char_cap" in error.problem


def test_unknown_provider(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", '[models.x]\nprovider = "mistral"\n')
    error = load_error(tmp_path, user)
    assert error.key == "models.x.provider"
    assert "'openai'" in error.problem
    assert "'mistral'" in error.problem


def test_missing_provider(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", '[models.x]\nmodel = "m"\n')
    error = load_error(tmp_path, user)
    assert error.key == "models.x.provider"
    assert "missing" in error.problem


def test_bad_egress_class(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", '[models.x]\nprovider = "openai"\negress = "secret"\n')
    error = load_error(tmp_path, user)
    assert error.key == "models.x.egress"
    assert "'restricted'" in error.problem


def test_bad_shell_class(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", '[context]\nshell_class = "open"\n')
    assert load_error(tmp_path, user).key == "context.shell_class"


def test_default_model_naming_a_missing_entry(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", 'default_model = "nope"\n')
    error = load_error(tmp_path, user)
    assert (error.file, error.key) == (user, "default_model")
    assert "'nope'" in error.problem
    assert "configured: scripted" in error.problem


def test_negative_char_cap(tmp_path: Path) -> None:
    root = project(tmp_path, "[context]\nchar_cap = -1\n")
    error = load_error(root)
    assert error.key == "context.char_cap"
    assert "greater than 0" in error.problem


def test_an_api_key_in_the_config_is_refused(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", '[models.x]\nprovider = "openai"\napi_key = "sk-1"\n')
    error = load_error(tmp_path, user)
    assert error.key == "models.x.api_key"
    assert "api_key_env" in error.problem
    assert "sk-1" not in str(error)


def test_area_path_must_be_an_import_path(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", '[[areas]]\npath = "not a path"\n')
    error = load_error(tmp_path, user)
    assert error.key == "areas[0].path"
    assert "package.module:ClassName" in error.problem


def test_duplicate_mcp_server_names(tmp_path: Path) -> None:
    text = (
        '[[mcp_servers]]\nname = "a"\ncommand = "x"\n[[mcp_servers]]\nname = "a"\ncommand = "y"\n'
    )
    error = load_error(tmp_path, write(tmp_path / "u.toml", text))
    assert error.key == "mcp_servers[1].name"  # the second of the two
    assert "'a'" in error.problem


def test_error_blames_the_layer_that_set_the_key(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", '[models.m]\nprovider = "openai"\ntimeout = -1.0\n')
    root = project(tmp_path, '[models.m]\nmodel = "x"\n')
    error = load_error(root, user, trust_project=True)
    assert (error.file, error.key) == (user, "models.m.timeout")


@pytest.mark.parametrize("key", ["first_event_timeout", "idle_timeout", "request_timeout"])
@pytest.mark.parametrize("value", ["0", "-1.5", '"60"'])
def test_stream_deadlines_are_positive_seconds(tmp_path: Path, key: str, value: str) -> None:
    user = write(tmp_path / "u.toml", f'[models.m]\nprovider = "openai"\n{key} = {value}\n')
    error = load_error(tmp_path, user)
    assert (error.file, error.key) == (user, f"models.m.{key}")


def test_stream_deadlines_are_read_from_the_entry(tmp_path: Path) -> None:
    text = '[models.m]\nprovider = "openai"\nfirst_event_timeout = 0.5\nidle_timeout = 2\n'
    _, entry = load_config(tmp_path, user_file=write(tmp_path / "u.toml", text)).model("m")
    assert (entry.first_event_timeout, entry.idle_timeout, entry.request_timeout) == (
        0.5,
        2.0,
        900.0,
    )


def test_quoted_model_names_stay_quoted_in_the_key(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", '[models."gpt-4.1"]\nprovider = "openai"\nmax_retries = -2\n')
    assert load_error(tmp_path, user).key == 'models."gpt-4.1".max_retries'


def test_every_problem_is_listed(tmp_path: Path) -> None:
    user = write(tmp_path / "u.toml", "[context]\nchar_cap = 0\n[agent]\nmax_steps = 0\n")
    error = load_error(tmp_path, user)
    assert len(error.problems) == 2
    assert any("context.char_cap" in p for p in error.problems)
    assert any("agent.max_steps" in p for p in error.problems)
    assert all(p.startswith(str(user)) for p in error.problems)


def test_the_console_theme_is_read_and_a_project_may_set_it_untrusted(tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", '[console]\ntheme = "nord"\n')
    assert load_config(tmp_path, user_file=user).console.theme == "nord"
    assert load_config(tmp_path).console.theme is None
    root = project(tmp_path, '[console]\ntheme = "textual-light"\n')
    assert load_config(root, user_file=user).console.theme == "textual-light"


def test_a_console_theme_that_is_not_a_string_is_an_error(tmp_path: Path) -> None:
    user = write(tmp_path / "user.toml", "[console]\ntheme = 3\n")
    error = load_error(tmp_path, user)
    assert "console.theme" in str(error)


def test_the_checkpoints_section_is_read_and_checked(tmp_path: Path) -> None:
    user = write(
        tmp_path / "u.toml",
        '[checkpoints]\nenabled = false\nexclude = ["build/"]\nmax_files = 100\n',
    )
    checkpoints = load_config(tmp_path, user_file=user).checkpoints
    assert (checkpoints.enabled, checkpoints.exclude, checkpoints.max_files) == (
        False,
        ["build/"],
        100,
    )
    wrong = write(tmp_path / "w.toml", "[checkpoints]\nmax_file_bytes = 0\nmax_fils = 3\n")
    error = load_error(tmp_path, wrong)
    assert error.key == "checkpoints.max_file_bytes"
    assert any("checkpoints.max_fils: unknown key" in line for line in error.problems)
