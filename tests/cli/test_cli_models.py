"""`trellis models`: every entry a session may bind, wherever it comes from, the local servers'
answers and the user config's path; and a default that names a local model that is not served.
Each local server here is the test's own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from app import cli
from engine.local_servers import SERVERS_ENV
from tests.agent.harness import trellis_argv, trellis_env
from tests.local_model_server import ModelListServer, closed_port


def run_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], config: str
) -> tuple[int, list[str], str]:
    """`trellis models` in this process, on a user config holding `config`."""
    user = tmp_path / "config.toml"
    user.write_text(config, encoding="utf-8")
    monkeypatch.setenv("TRELLIS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRELLIS_CONFIG", str(user))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = cli.main(["models"])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_models_lists_keys_local_servers_and_the_user_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-test")
    absent = closed_port()
    with ModelListServer(["qwen3:8b", {"id": "big", "max_model_len": 131072}]) as ollama:
        monkeypatch.setenv(SERVERS_ENV, f"ollama={ollama.port},vllm={absent}")
        code, lines, err = run_models(tmp_path, monkeypatch, capsys, "")
    assert (code, err) == (0, "")
    assert [line[2:].split()[:5] for line in lines[1:5]] == [
        ["scripted", "scripted", "scripted", "-", "restricted"],
        ["anthropic", "anthropic", "claude-sonnet-5-5", "1,000,000", "internal"],
        ["ollama/qwen3:8b", "openai", "qwen3:8b", "?", "restricted"],
        ["ollama/big", "openai", "big", "131,072", "restricted"],
    ]
    assert lines[1].startswith("* scripted")  # the default until one is picked
    assert lines[2].endswith("environment ANTHROPIC_API_KEY")
    assert lines[3].endswith(f"ollama at 127.0.0.1:{ollama.port}")
    assert f"local server ollama at 127.0.0.1:{ollama.port}: 2 models" in lines
    assert f"local server vllm at 127.0.0.1:{absent}: not running (connection refused)" in lines
    assert f"user config: {tmp_path / 'config.toml'}" in lines


def test_models_with_discovery_off_asks_no_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ModelListServer(["qwen3:8b"]) as ollama:
        monkeypatch.setenv(SERVERS_ENV, f"ollama={ollama.port}")
        code, lines, _ = run_models(tmp_path, monkeypatch, capsys, "[discovery]\nlocal = false\n")
        assert ollama.paths == []
    assert code == 0
    assert "local servers: not asked ([discovery] local = false)" in lines
    assert not any("ollama/" in line for line in lines)


def test_a_default_local_model_that_is_not_served_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ModelListServer(["llama3.2"]) as ollama:
        monkeypatch.setenv(SERVERS_ENV, f"ollama={ollama.port}")
        code, lines, err = run_models(
            tmp_path, monkeypatch, capsys, 'default_model = "ollama/qwen3:8b"\n'
        )
    assert code == 2
    assert any(line.startswith("  ollama/llama3.2") for line in lines)
    assert err == (
        f"trellis: default_model: model 'ollama/qwen3:8b': asked Ollama at "
        f"http://127.0.0.1:{ollama.port}/v1/models: it serves no 'qwen3:8b' "
        "(it serves: llama3.2)\n"
    )


def test_a_run_on_a_default_local_model_that_is_gone_says_what_was_asked(tmp_path: Path) -> None:
    """The real command: nothing but the one line on stderr, exit 2."""
    config = tmp_path / "config.toml"
    config.write_text('default_model = "lmstudio/qwen3"\n', encoding="utf-8")
    port = closed_port()
    environment = trellis_env(home=tmp_path / "home", config=config)
    environment[SERVERS_ENV] = f"lmstudio={port}"
    done = subprocess.run(
        trellis_argv(["run", "-p", "hi"]),
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"trellis: model 'lmstudio/qwen3': asked LM Studio at http://127.0.0.1:{port}/v1/models: "
        "not running (connection refused)\n"
    )
