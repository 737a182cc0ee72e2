"""The configuration a resumed session runs with: its own workspace's, not the caller's.

A session stored from one project and resumed from another directory keeps the project it was
made in, so it must also keep that project's config (and that project's trust): the caller's
current directory may hold a different, untrusted `.trellis/config.toml`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from engine.config import LoadedConfig, load_config_report
from engine.os_text import stored_os_path
from engine.store.base import SessionStore

if TYPE_CHECKING:
    from engine.trust import TrustStore  # a new `trellis run` imports this module, not the trust


async def load_session_config(
    store: SessionStore,
    session_id: str,
    *,
    trust_project: bool = False,
    user_file: Path | None = None,
    trust_store: TrustStore | None = None,
) -> LoadedConfig:
    """The configuration seen from the stored session's workspace, for `open_agent(session_id=)`.

    Raises `UnknownSessionError` (a `StoreError`) for an unknown id and `ConfigError` as
    `load_config_report` does. The files are read in a worker thread.
    """
    info = await store.info(session_id)

    def load() -> LoadedConfig:
        return load_config_report(
            stored_os_path(info.cwd),
            user_file=user_file,
            trust_project=trust_project,
            trust_store=trust_store,
        )

    return await asyncio.to_thread(load)
