"""A resumed session runs with its own workspace's config (issue 9), not the caller's directory's."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.agent.session_config import load_session_config
from engine.store import StoreError
from engine.store.sqlite.store import SQLiteStore
from engine.trust import TrustStore, file_digest


def project(root: Path, text: str) -> Path:
    (root / ".trellis").mkdir(parents=True)
    (root / ".trellis" / "config.toml").write_text(text)
    return root


async def test_the_session_workspace_config_and_its_trust_apply(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text("")
    made_in = project(tmp_path / "made-in", "[agent]\nmax_steps = 7\n[[areas]]\npath = 'a.b:C'\n")
    project(tmp_path / "resumed-from", "[agent]\nmax_steps = 3\n")
    trust = TrustStore(tmp_path / "trust.json")
    async with SQLiteStore(tmp_path / "sessions.sqlite") as store:
        info = await store.create(cwd=str(made_in), model="scripted")
        loaded = await load_session_config(store, info.id, user_file=user, trust_store=trust)
        assert loaded.config.agent.max_steps == 7
        assert loaded.project is not None
        assert loaded.project.directory == made_in.resolve()
        assert [s.key for s in loaded.project.skipped] == ["areas"]

        data = (made_in / ".trellis" / "config.toml").read_bytes()
        trust.trust(made_in, file_digest(data))
        trusted = await load_session_config(store, info.id, user_file=user, trust_store=trust)
        assert [a.path for a in trusted.config.areas] == ["a.b:C"]

        with pytest.raises(StoreError):
            await load_session_config(store, "no-such-session", user_file=user)
