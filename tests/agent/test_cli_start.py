"""Start time is part of the command line's interface: each command imports what it uses.

Every check runs in a fresh interpreter and inspects `sys.modules`, so nothing this test process
already imported can hide an import. Speed itself is measured in `tests/bench/start.py`.
"""

from __future__ import annotations

import json
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
    "engine.store.postgres",
    "engine.agent.compactor",
    "engine.agent.views",
    "engine.context.replayer",
    "engine.context.resume",
    "engine.gateway.codec.openai",
    "engine.gateway.codec.gemini",
    "engine.gateway.codec.anthropic",
    "engine.gateway.script_file",
)
"""What `trellis run -p` on a new session with the scripted model never uses: the PostgreSQL store,
/compact, the front ends' views, replaying and resuming a log, the other providers' codecs, the
script file's models."""

VERSION_NEEDS_NONE_OF = ("argparse", "asyncio", "app.cli", "importlib.metadata", "pydantic")
"""`trellis --version` alone is answered before the command line exists."""


def of_packages(loaded: set[str], packages: tuple[str, ...]) -> list[str]:
    """The loaded modules that are one of `packages` or inside one."""
    return sorted(
        m for m in loaded if m in packages or m.startswith(tuple(f"{p}." for p in packages))
    )


def loaded_after(code: str, tmp_path: Path) -> set[str]:
    """The modules loaded once `code` has run in a fresh interpreter (on a temp TRELLIS_HOME)."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    env = trellis_env(home=tmp_path / "home", config=tmp_path / "config.toml")
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


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
    tool's argument model builds when a call is validated or a gateway reads its schema."""
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    script = (
        "import json, sys\n"
        "from app.cli import main\n"
        "code = main(['run', '-p', 'hi'])\n"
        "import engine.events as e\n"
        "from engine.tools.builtins import builtin_tools\n"
        "built = sorted(t for t, p in e.PAYLOADS.items() if p.__pydantic_complete__)\n"
        "tools = sorted(t.name for t in builtin_tools() if t.args_model.__pydantic_complete__)\n"
        "print(json.dumps([code, built, tools]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=trellis_env(home=tmp_path / "home", config=tmp_path / "config.toml"),
        capture_output=True,
        text=True,
        check=True,
    )
    code, built, tools = json.loads(done.stdout.splitlines()[-1])
    assert code == 0
    assert "turn/start" in built
    assert not {"compact/summary", "area/render", "pin/add", "gc/collect"} & set(built)
    assert tools == []  # the scripted model reads no schema and no tool was called


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
