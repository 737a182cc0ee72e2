"""The `trellis serve` command (issue 13, items 1 and 7): the token it prints once, the `[serve]`
section (which an untrusted project cannot set), bad input as one line with exit 2, and a clean stop
on SIGTERM and SIGINT."""

from __future__ import annotations

import json
import signal
import stat
from pathlib import Path

import pytest
from acp import text_block
from acp.exceptions import RequestError

from engine.config import ServeConfig
from tests.acp.http_peer import http_url
from tests.acp.ws_peer import ServeProcess, acp_client, serving
from tests.agent.harness import trellis


def banner(server: ServeProcess) -> str:
    return "".join(server.stderr)


def test_a_generated_token_is_printed_on_first_start_only(tmp_path: Path) -> None:
    with serving(tmp_path, token=None) as first:
        path = first.home / "serve-token"
        token = path.read_text(encoding="ascii").strip()
        assert f"new token {token} (stored in {path})" in banner(first)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with serving(tmp_path, token=None) as second:
        assert token not in banner(second)
        assert f"token from {path}" in banner(second)


async def test_configured_roots_replace_the_start_directory(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    with serving(tmp_path, config=f'[serve]\nroots = ["{allowed}"]\n') as server:
        assert f"(sessions under {allowed})" in banner(server)
        async with acp_client(server.url) as (connection, _):
            new = await connection.new_session(cwd=str(allowed))
            with pytest.raises(RequestError, match="is not under the served roots"):
                await connection.new_session(cwd=str(server.root))
    assert new.session_id


def test_an_untrusted_project_cannot_set_serve(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".trellis").mkdir(parents=True)
    (project / ".trellis" / "config.toml").write_text(
        '[serve]\nroots = ["/"]\nallowed_origins = ["https://evil.example"]\n', encoding="utf-8"
    )
    with serving(tmp_path, root=project) as server:
        text = banner(server)
    assert f"(sessions under {project.resolve()})" in text
    assert "skipped serve" in text


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_it_names_url_roots_and_token_and_a_stop_signal_stops_it_cleanly(
    tmp_path: Path, signum: int
) -> None:
    with serving(tmp_path) as server:
        code = server.stop(signum)
    assert code == 0
    assert server.url.startswith("ws://127.0.0.1:")
    assert banner(server) == (
        "trellis: token from the environment variable TRELLIS_SERVE_TOKEN; send it as "
        "`Authorization: Bearer TOKEN`\n"
        f"trellis: streamable HTTP (HTTP/2, or a WebSocket upgrade) at {http_url(server)}\n"
        f"trellis: serving ACP at {server.url} (sessions under {server.root})\n"
        "trellis: stopped\n"
    )


def run_serve(tmp_path: Path, *args: str, config: str = "") -> tuple[int, str]:
    config_file = tmp_path / "config.toml"
    config_file.write_text(config, encoding="utf-8")
    done = trellis(["serve", *args], home=tmp_path / "home", config=config_file, cwd=tmp_path)
    return done.code, done.stderr


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with serving(tmp_path) as server:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        code, stderr = run_serve(tmp_path, "--port", port)
    assert code == 2
    assert stderr.startswith(f"trellis: cannot listen on 127.0.0.1:{port}: ")
    assert stderr.count("\n") == 1


def test_an_http_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with serving(tmp_path) as server:
        port = http_url(server).rsplit(":", 1)[1].split("/")[0]
        code, stderr = run_serve(tmp_path, "--port", "0", "--http-port", port)
    assert code == 2
    assert stderr.startswith(f"trellis: cannot listen on 127.0.0.1:{port}: ")
    assert stderr.count("\n") == 1


def test_the_http_port_is_the_next_one_unless_configured(tmp_path: Path) -> None:
    with serving(tmp_path, config="[serve]\nhttp_port = 0\n") as server:
        assert http_url(server).startswith("http://127.0.0.1:")
    settings = ServeConfig()
    assert (settings.http_port_for(8765), settings.http_port_for(0)) == (8766, 0)
    assert settings.http_port_for(65535) == 0
    assert ServeConfig(http_port=9000).http_port_for(8765) == 9000


def test_a_bad_http_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    assert run_serve(tmp_path, "--http-port", "-1") == (
        2,
        "trellis: --http-port must be 0 to 65535, got -1\n",
    )


def test_a_bad_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    assert run_serve(tmp_path, "--port", "70000") == (
        2,
        "trellis: --port must be 0 to 65535, got 70000\n",
    )


def test_a_relative_root_is_a_config_error(tmp_path: Path) -> None:
    code, stderr = run_serve(tmp_path, config='[serve]\nroots = ["here"]\n')
    assert code == 2
    assert "serve.roots[0]" in stderr
    assert "must be an absolute path" in stderr


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    token = tmp_path / "home" / "serve-token"
    token.parent.mkdir()
    token.write_text("some-token-value\n", encoding="ascii")
    token.chmod(0o644)
    code, stderr = run_serve(tmp_path)
    assert code == 2
    assert stderr == (
        f"trellis: the serve token {token} is open to other users (mode 644); run `chmod 600` "
        "on it, or delete it to get a new token\n"
    )


async def test_a_token_not_from_the_environment_is_redacted_like_an_api_key(
    tmp_path: Path,
) -> None:
    token = "stored-serve-token-" + "q" * 30
    home = tmp_path / "serve" / "home"
    home.mkdir(parents=True)
    stored = home / "serve-token"
    stored.write_text(token + "\n", encoding="ascii")
    stored.chmod(0o600)
    script = tmp_path / "leak.json"
    leak = {"error": f"the upstream refused bearer {token}"}  # an error quoting the token
    script.write_text(json.dumps({"replies": [leak]}), encoding="utf-8")
    config = f'default_model = "leak"\n[models.leak]\nprovider = "scripted"\nscript = "{script}"\n'
    with serving(tmp_path, config=config, token=None) as server:
        async with acp_client(server.url, token=token) as (connection, _):
            new = await connection.new_session(cwd=str(server.root))
            with pytest.raises(RequestError) as failed:
                await connection.prompt(session_id=new.session_id, prompt=[text_block("hi")])
    assert "the upstream refused bearer [redacted]" in str(failed.value)
    assert token not in str(failed.value)
