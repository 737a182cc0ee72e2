"""Start time is part of the command line's interface: each command imports what it uses.

Every check runs in a fresh interpreter and inspects `sys.modules`, so nothing this test process
already imported can hide an import. Speed itself is measured in `tests/bench/start.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.agent.harness import trellis, trellis_env

NEVER_AT_IMPORT = (
    "mcp",
    "httpx",
    "textual",
    "websockets",
    "acp",
    "engine.gateway.openai",
    "engine.gateway.gemini",
    "engine.gateway.anthropic",
    "engine.gateway.http",
    "engine.agent",
    "engine.events",
)
"""What importing `app.cli` must not load: the MCP client, the network gateways, the console,
the ACP bridge (`websockets`, the `acp` package's schema: only `serve` and `acp` use them), and the
agent and event models, which only `run` uses."""

EVENT_MODELS = ("engine.events", "engine.invariants", "pydantic.main")
"""What `trellis sessions` must not load: the sessions table is read without the event log."""

OTHER_FRONT_ENDS = ("textual", "websockets", "acp", "asyncpg", "mcp", "httpx")
"""What neither `trellis sessions` nor `trellis run` loads: the console, the ACP bridge, the
PostgreSQL driver (only a configured postgresql URL needs it), the MCP client and the network
gateways' HTTP client (the default model is the scripted one)."""

UNUSED_BY_A_NEW_RUN = (
    "engine.store.postgres.store",
    "engine.agent.compactor",
    "engine.agent.views",
    "engine.context.compaction",
    "engine.context.collector",
    "engine.context.rebuilder",
    "engine.context.resume",
    "engine.gateway.codec.openai",
    "engine.gateway.codec.gemini",
    "engine.gateway.codec.anthropic",
    "engine.gateway.script_file",
    "engine.project_config",
    "engine.trust",
    "platformdirs",
    "tomllib",
)
"""What `trellis run -p` on a new session with the scripted model never uses: the PostgreSQL store,
/compact, the front ends' views, the Collector's component walk (no Area has rendered), replaying and resuming a log, the other providers' codecs, the
script file's models; in a workspace without a project file, the project trust; with
`TRELLIS_HOME` and `TRELLIS_CONFIG` set (as the tests run), the platform's directories; with an
empty config file, the TOML parser."""

CONFIG_MODELS = ("Config", "ModelEntry", "ContextConfig", "McpServer", "AreaEntry", "ServeConfig")

VERSION_NEEDS_NONE_OF = ("argparse", "asyncio", "app.cli", "importlib.metadata", "pydantic")
"""`trellis --version` alone is answered before the command line exists."""


def of_packages(loaded: set[str], packages: tuple[str, ...]) -> list[str]:
    """The loaded modules that are one of `packages` or inside one."""
    return sorted(
        m for m in loaded if m in packages or m.startswith(tuple(f"{p}." for p in packages))
    )


def python_output(script: str, tmp_path: Path) -> str:
    """What `script` prints in a fresh interpreter (on a temp TRELLIS_HOME and user config)."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=trellis_env(home=tmp_path / "home", config=tmp_path / "config.toml"),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def loaded_after(code: str, tmp_path: Path) -> set[str]:
    """The modules loaded once `code` has run in a fresh interpreter (on a temp TRELLIS_HOME)."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    return set(json.loads(python_output(script, tmp_path).splitlines()[-1]))


def test_importing_the_cli_loads_no_command_s_machinery(tmp_path: Path) -> None:
    loaded = loaded_after("import app.cli", tmp_path)
    assert sorted(loaded & set(NEVER_AT_IMPORT)) == []


def test_listing_sessions_loads_no_event_model(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    loaded = loaded_after(
        "from app.cli import main\nassert main(['sessions', '--all']) == 0", tmp_path
    )
    assert sorted(loaded & set(EVENT_MODELS)) == []
    assert "engine.store.catalog" in loaded


def test_version_prints_the_installed_package_version(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    done = trellis(["--version"], home=tmp_path / "home", config=config, cwd=tmp_path)
    assert (done.code, done.stdout, done.stderr) == (0, f"trellis {version('trellis')}\n", "")
    assert not (tmp_path / "home").exists()  # it opens neither the log file nor the store


def test_a_run_builds_only_the_models_it_uses(tmp_path: Path) -> None:
    """The payload models build on first use: `run -p` on a new session decodes no stored row,
    so the models of the events it never writes (compaction, areas, pins, ...) stay unbuilt; a
    tool's argument model builds when a call is validated or its schema is read, as the first
    request's tool definitions are (logged as `tool/define`, the scripted model's too)."""
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    script = (
        "import json, sys\n"
        "from app.cli import main\n"
        "code = main(['run', '-p', 'hi'])\n"
        "import engine.events as e\n"
        "from engine.tools.builtins import builtin_tools\n"
        "built = sorted(t for t, p in e.PAYLOADS.items() if p.__pydantic_complete__)\n"
        "tools = sorted(t.name for t in builtin_tools() if t.args_model.__pydantic_complete__)\n"
        "offered = sorted(t.name for t in builtin_tools())\n"
        "import engine.config as c\n"
        f"config = sorted(m for m in {CONFIG_MODELS!r} if getattr(c, m).__pydantic_complete__)\n"
        "print(json.dumps([code, built, tools, offered, config]))\n"
    )
    output = python_output(script, tmp_path).splitlines()[-1]
    code, built, tools, offered, config = json.loads(output)
    assert code == 0
    assert "turn/start" in built
    assert not {"compact/summary", "area/render", "pin/add", "gc/collect"} & set(built)
    assert tools == offered  # each tool the request offered: its definition is logged
    assert config == []  # an empty config is the defaults, constructed without validation


def test_version_alone_loads_neither_the_command_line_nor_the_metadata(tmp_path: Path) -> None:
    """The console script (`app.launcher`) answers it from `app.version`."""
    loaded = loaded_after(
        "sys.argv = ['trellis', '--version']\nfrom app.launcher import main\nassert main() == 0",
        tmp_path,
    )
    assert of_packages(loaded, VERSION_NEEDS_NONE_OF) == []


def test_the_console_script_prints_the_installed_package_version(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app.launcher", "--version"],
        cwd=tmp_path,
        env=trellis_env(home=tmp_path / "home", config=tmp_path / "config.toml"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"trellis {version('trellis')}\n", "")


@pytest.mark.parametrize(
    ("argv", "unused"),
    [
        (["sessions", "--all"], OTHER_FRONT_ENDS),
        (["run", "-p", "hi"], OTHER_FRONT_ENDS + UNUSED_BY_A_NEW_RUN),
    ],
    ids=["sessions", "run"],
)
def test_a_command_loads_only_what_it_uses(
    tmp_path: Path, argv: list[str], unused: tuple[str, ...]
) -> None:
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    loaded = loaded_after(f"from app.cli import main\nassert main({argv!r}) == 0", tmp_path)
    assert of_packages(loaded, unused) == []


def _plugin_distribution(root: Path) -> Path:
    """A directory holding an installed distribution that declares a pydantic plugin whose module
    records that it was imported (it prints a line when loaded)."""
    root.mkdir()
    (root / "fake_plugin.py").write_text(
        "print('plugin loaded')\n"
        "class _Plugin:\n"
        "    def new_schema_validator(self, *args, **kwargs):\n"
        "        return None, None, None\n"
        "plugin = _Plugin()\n",
        encoding="utf-8",
    )
    info = root / "fake_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nfake = fake_plugin:plugin\n")
    return root


@pytest.mark.parametrize(
    ("variable", "loaded"),
    [(None, False), ("", True)],
    ids=["by-default-none", "PYDANTIC_DISABLE_PLUGINS-set"],
)
def test_the_console_script_loads_pydantic_plugins_only_when_asked(
    tmp_path: Path, variable: str | None, loaded: bool
) -> None:
    """Finding pydantic's plugins reads every installed distribution's entry points at the first
    model built; `trellis` skips that unless pydantic's own variable is set (empty: load all)."""
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    plugins = _plugin_distribution(tmp_path / "site")
    env = trellis_env(home=tmp_path / "home", config=tmp_path / "config.toml")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(plugins), env.get("PYTHONPATH")) if p)
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    if variable is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = variable
    done = subprocess.run(
        [sys.executable, "-m", "app.launcher", "run", "-p", "hi"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert ("plugin loaded" in done.stdout) is loaded


def test_the_console_script_runs_without_reading_any_distribution_s_metadata(
    tmp_path: Path,
) -> None:
    """pydantic's plugin loader imports `importlib.metadata` (with `email`, `zipfile`, ...) to find
    plugins that `trellis` does not load: its stand-in answers instead."""
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    loaded = loaded_after(
        "import contextlib, io\n"
        "sys.argv = ['trellis', 'run', '-p', 'hi']\n"
        "from app.launcher import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main() == 0",
        tmp_path,
    )
    assert of_packages(loaded, ("importlib.metadata", "email", "zipfile")) == []


def test_the_plugin_loader_s_stand_in_gives_way_to_the_real_one_without_plugins(
    tmp_path: Path,
) -> None:
    """A name the stand-in does not hold loads pydantic's own loader, still with no plugins."""
    script = (
        "import sys\n"
        "from app.launcher import PLUGIN_LOADER, _without_pydantic_plugins\n"
        "_without_pydantic_plugins()\n"
        "from pydantic.plugin._loader import PYDANTIC_ENTRY_POINT_GROUP, get_plugins\n"
        "print(PYDANTIC_ENTRY_POINT_GROUP, list(get_plugins()), sys.modules[PLUGIN_LOADER].__file__)\n"
    )
    group, plugins, path = python_output(script, tmp_path).split()
    assert (group, plugins) == ("pydantic", "[]")
    assert Path(path).name == "_loader.py"


def test_no_collection_walks_the_objects_a_run_s_imports_left(tmp_path: Path) -> None:
    """The collector is paused while the command line and then `run`'s modules are imported, and
    what they leave alive is frozen: every collection of the run finds them frozen, and the
    collector is enabled again for the turn (issue 10)."""
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    script = (
        "import contextlib, gc, io, json, sys\n"
        "import engine.gc_policy\n"
        "sys.argv = ['trellis', 'run', '-p', 'hi']\n"
        "from app.launcher import main\n"
        "seen = []\n"
        "gc.callbacks.append(lambda phase, _: phase == 'start' and seen.append(gc.get_freeze_count()))\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main() == 0\n"
        "print(json.dumps([seen, gc.isenabled()]))\n"
    )
    seen, enabled = json.loads(python_output(script, tmp_path).splitlines()[-1])
    assert enabled
    assert seen  # the turn's own allocations are still collected
    assert min(seen) > 0


def test_the_console_script_leaves_what_is_alive_at_exit_to_the_os(tmp_path: Path) -> None:
    """At exit the collector would walk every module's objects once more before the process ends:
    the console script moves them out of its reach first (`gc.freeze`)."""
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    script = (
        "import atexit, gc, io, contextlib, sys\n"
        "sys.argv = ['trellis', 'sessions']\n"
        "from app.launcher import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main() == 0\n"
        "before = gc.get_freeze_count()\n"
        "atexit._run_exitfuncs()\n"
        "print(before, gc.get_freeze_count())\n"
    )
    before, after = map(int, python_output(script, tmp_path).split())
    assert after > before
