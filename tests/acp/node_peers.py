"""ACP clients written by others, run by the tests against `trellis acp`: the official TypeScript
SDK's client (`node_peers/scenario.mjs` runs a scenario with it, over stdio from
`stdio_client.mjs`, against `trellis serve` by WebSocket or HTTP from `serve_client.mjs`) and
`acpx`, the headless ACP CLI. Both come from npm at the versions `node_peers/package-lock.json` pins, installed once into
`node_peers/node_modules` by `npm install --no-save` (the lock as it is: `npm ci` refuses a lock
that lacks other platforms' optional packages, as npm writes it); a file lock keeps
pytest-xdist's workers from installing at once.

Without Node.js their tests skip, unless `TRELLIS_REQUIRE_NODE` is set (CI sets it): then a
missing Node.js or a failed install fails them.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.agent.harness import REPO_ROOT, trellis_env

PEERS = Path(__file__).with_name("node_peers")
REQUIRE_ENV = "TRELLIS_REQUIRE_NODE"
"""Set (CI sets it): a missing Node.js fails these tests instead of skipping them."""


def _unavailable(why: str) -> None:
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{why} ({REQUIRE_ENV} is set)")
    pytest.skip(why)


def _installed() -> bool:
    """Whether node_modules holds the versions package.json pins."""
    wanted: dict[str, str] = json.loads((PEERS / "package.json").read_text())["dependencies"]
    for name, version in wanted.items():
        manifest = PEERS / "node_modules" / name / "package.json"
        if not manifest.exists() or json.loads(manifest.read_text())["version"] != version:
            return False
    return True


def node_peers() -> Path:
    """The installed peers' folder; skips (or fails, see `REQUIRE_ENV`) without Node.js."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        _unavailable("Node.js and npm are not installed")
    with (PEERS / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed():
            done = subprocess.run(
                ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--ignore-scripts"],
                cwd=PEERS,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0:
                _unavailable(f"npm ci failed: {done.stderr.strip()[-2000:]}")
    return PEERS


@dataclass(frozen=True, slots=True)
class Place:
    """Where a peer runs `trellis acp`: a workspace, and a home for its data and config."""

    workspace: Path
    home: Path

    @classmethod
    def under(cls, folder: Path) -> Place:
        """A new workspace and home in `folder`."""
        workspace = folder / "workspace"
        workspace.mkdir(parents=True)
        return cls(workspace=workspace, home=folder / "home")

    def script(self, replies: Sequence[dict[str, Any]]) -> list[str]:
        """`--script FILE` for `trellis acp`: the offline model's replies, in order."""
        return ["--script", str(replies_file(self.home, replies))]

    def env(self) -> dict[str, str]:
        config = self.home / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.touch()
        env = trellis_env(home=self.home / "data", config=config)
        env["PYTHONPATH"] = str(REPO_ROOT)
        return env

    def agent(self, *args: str) -> list[str]:
        """The command line of `trellis acp ARGS` from this checkout."""
        return [sys.executable, "-m", "app.cli", "acp", "--root", str(self.workspace), *args]


def replies_file(folder: Path, replies: Sequence[dict[str, Any]]) -> Path:
    """A script of the offline model (`provider = "scripted"`): `replies`, in order."""
    path = folder / "replies.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"replies": list(replies)}), encoding="utf-8")
    return path


def sdk_run(
    place: Place,
    steps: Sequence[dict[str, Any]],
    *,
    agent_args: Sequence[str] = (),
    permission: str = "allow_once",
) -> list[dict[str, Any]]:
    """Run `steps` with the TypeScript SDK's client against a `trellis acp` it spawns; every
    message it got, in order (see `node_peers/scenario.mjs`). Fails on an SDK error."""
    scenario = {
        "agent": place.agent(*agent_args),
        "cwd": str(place.workspace),
        "env": place.env(),
        "permission": permission,
        "steps": list(steps),
    }
    return _scenario("stdio_client.mjs", scenario, place.home / "scenario.json")


def serve_run(
    url: str,
    token: str,
    folder: Path,
    steps: Sequence[dict[str, Any]],
    *,
    permission: str,
    sdk_errors: bool = False,
) -> list[dict[str, Any]]:
    """Run `steps` with the TypeScript SDK's client against `trellis serve` at `url` (a `ws://`
    URL: its WebSocket client; `http://`: its streamable HTTP client), the scenario file kept in
    `folder`; every message it got, in order. Fails on an SDK error unless `sdk_errors`, which
    returns them among the lines (`kind: "sdk"`)."""
    scenario = {"url": url, "token": token, "permission": permission, "steps": list(steps)}
    path = folder / f"scenario-{uuid.uuid4().hex}.json"
    return _scenario("serve_client.mjs", scenario, path, sdk_errors=sdk_errors)


def _scenario(
    runner: str, scenario: dict[str, Any], path: Path, *, sdk_errors: bool = False
) -> list[dict[str, Any]]:
    peers = node_peers()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scenario), encoding="utf-8")
    done = subprocess.run(
        ["node", str(peers / runner), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if sdk_errors:
        return lines
    failed = [line for line in lines if line["kind"] == "sdk"]
    assert not failed, (failed, done.stderr[-3000:])
    assert done.returncode == 0, done.stderr[-3000:]
    return lines


def acpx_run(
    place: Place, *args: str, agent_args: Sequence[str] = (), state: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`acpx --agent "trellis acp ..." --format json ARGS` in the workspace; acpx keeps its own
    state (its session records, `~/.acpx`) under `state`, by default the place's home."""
    peers = node_peers()
    env = place.env()
    env["HOME"] = str(state or place.home)
    agent = shlex.join(place.agent(*agent_args))
    return subprocess.run(
        [
            str(peers / "node_modules" / ".bin" / "acpx"),
            "--agent",
            agent,
            "--format",
            "json",
            *args,
        ],
        cwd=place.workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
