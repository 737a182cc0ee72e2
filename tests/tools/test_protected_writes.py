"""The write tools refuse Trellis's own configuration (issue 9): a model that could write
`.trellis/config.toml`, the user config or the trust record could grant itself what only the user
may; an explicitly allowed path is written as usual."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine.tools import ToolContext, ToolOutput, default_registry

PROJECT_CONFIG = '[[mcp_servers]]\nname = "x"\ncommand = "true"\n'


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolOutput:
    return await default_registry().call(name, arguments, ctx)


def text(path: Path) -> str:
    return path.read_text()


@pytest.fixture
def project(root: Path) -> Path:
    config = root / ".trellis" / "config.toml"
    config.parent.mkdir()
    config.write_text(PROJECT_CONFIG)
    return config


@pytest.mark.parametrize(
    "path",
    [
        ".trellis/config.toml",
        ".trellis/new.toml",
        "./src/../.trellis/config.toml",
        ".Trellis/config.toml",
        "sub/.trellis/config.toml",
        ".trellis",
    ],
)
async def test_write_file_refuses_trellis_directories(
    ctx: ToolContext, project: Path, path: str
) -> None:
    out = await call(ctx, "write_file", path=path, content="[[areas]]\n")
    assert out.is_error
    assert out.content.startswith(f"refused: {path!r} is inside .trellis/")
    assert "agent.allow_protected_writes" in out.content  # the model can tell the user how
    assert text(project) == PROJECT_CONFIG
    assert not (ctx.root / "sub").exists()


async def test_edit_file_refuses_the_project_config(ctx: ToolContext, project: Path) -> None:
    out = await call(ctx, "edit_file", path=".trellis/config.toml", old="true", new="touch x")
    assert out.is_error
    assert "refused" in out.content
    assert text(project) == PROJECT_CONFIG


async def test_a_symlink_into_trellis_is_refused(ctx: ToolContext, project: Path) -> None:
    (ctx.root / "innocent").symlink_to(project.parent)
    out = await call(ctx, "write_file", path="innocent/config.toml", content="x")
    assert out.is_error
    assert "inside .trellis/" in out.content
    assert text(project) == PROJECT_CONFIG


async def test_the_user_config_and_the_trust_record_are_refused(ctx: ToolContext) -> None:
    user = ctx.root / "home" / "config.toml"
    trust = ctx.root / "data" / "trusted-projects.json"
    guarded = replace(ctx, protected_paths=(user, trust))
    for path in ("home/config.toml", "data/trusted-projects.json"):
        out = await call(guarded, "write_file", path=path, content="x")
        assert out.is_error
        assert "Trellis's own configuration" in out.content
    assert not user.exists()
    assert not trust.exists()
    assert not (await call(guarded, "write_file", path="home/other.txt", content="x")).is_error


@pytest.mark.parametrize("allowed", [".trellis/config.toml", ".trellis"])
async def test_an_allowed_path_is_written(ctx: ToolContext, project: Path, allowed: str) -> None:
    permitted = replace(ctx, allowed_protected=(Path(allowed),))
    out = await call(permitted, "write_file", path=".trellis/config.toml", content="# mine\n")
    assert not out.is_error, out.content
    assert text(project) == "# mine\n"
    edited = await call(permitted, "edit_file", path=".trellis/config.toml", old="mine", new="ok")
    assert not edited.is_error, edited.content


async def test_allowing_one_file_does_not_allow_its_neighbours(
    ctx: ToolContext, project: Path
) -> None:
    permitted = replace(ctx, allowed_protected=(Path(".trellis/notes.md"),))
    out = await call(permitted, "write_file", path=".trellis/config.toml", content="x")
    assert out.is_error
    assert text(project) == PROJECT_CONFIG


async def test_ordinary_writes_are_unaffected(ctx: ToolContext) -> None:
    out = await call(ctx, "write_file", path="trellis/config.toml", content="fine")
    assert not out.is_error, out.content
    assert (ctx.root / "trellis" / "config.toml").read_text() == "fine"
