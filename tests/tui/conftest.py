"""The console under test: a `TrellisApp` on the scripted model with a fixed clock and workspace.

`ConsoleTestApp` is the real app with what varies between runs pinned down (time, the model's
replies, the data directory and the workspace, the cursor blink), so Pilot tests assert behaviour and
snapshot tests compare pixels. Snapshot baselines live in the repository's `snapshots/` folder.
"""

from __future__ import annotations

import fcntl
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import pytest
import pytest_textual_snapshot
from syrupy.location import PyTestLocation

from app.tui.app import TrellisApp
from app.tui.screens.main import MainScreen
from engine.agent import Agent
from engine.config import Config
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.local_servers import LocalServer
from engine.project_config import ProjectLayer
from engine.store.settings import StoreSettings
from engine.tools import ToolRegistry

REPO = Path(__file__).resolve().parents[2]
SNAPSHOTS = REPO / "snapshots"


def _snapshot_dir(cls: type, *, test_location: PyTestLocation) -> str:
    """Baselines under `snapshots/<test module>/`, not beside the tests."""
    return str(SNAPSHOTS / Path(test_location.filepath).stem)


pytest_textual_snapshot.SVGImageExtension.dirname = classmethod(_snapshot_dir)


def fixed_clock(start: float = 1_796_000_000.0) -> Callable[[], float]:
    """The same instant at every reading: how many readings a run takes (live events vary with
    timing) never shows on screen."""
    return lambda: start


class ConsoleTestApp(TrellisApp):
    """The console with a scripted model, a fixed clock and no cursor blink; no local server is
    asked for its models unless `local_servers` names a test's own."""

    CURSOR_BLINK = False

    def __init__(
        self,
        workspace: Path,
        data: Path,
        replies: Iterable[Reply] = (),
        *,
        config: Config | None = None,
        session_id: str | None = None,
        tools: ToolRegistry | None = None,
        project: ProjectLayer | None = None,
        store: StoreSettings | None = None,
        local_servers: Sequence[LocalServer] = (),
    ) -> None:
        self.gateway = ScriptedGateway(replies)
        super().__init__(
            config=config or Config(),
            cwd=workspace,
            store_path=data / "sessions.sqlite",
            store=store,
            session_id=session_id,
            gateway=self.gateway,
            clock=fixed_clock(),
            tools=tools,
            project=project,
            local_servers=local_servers,
        )

    @property
    def live(self) -> Agent:
        assert self.agent is not None, "the session is not open yet"
        return self.agent

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[1] if len(self.screen_stack) > 1 else self.screen
        assert isinstance(screen, MainScreen)
        return screen


SNAPSHOT_WORKSPACE = Path(tempfile.gettempdir()) / "trellis-console-tests" / "workspace"
"""One fixed path for the snapshot tests: the environment floor block names the workspace, so its
length shows in the character counts on screen and the path itself in the prefix digest."""


@pytest.fixture
def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A workspace with a notes file. A snapshot test's is the fixed path, shared by every test
    run on this machine (several checkouts, and the processes of a parallel run, may run their
    suites at once), so such a test holds an exclusive lock on it for its whole run; the other
    tests take a path of their own and run side by side."""
    if "snap_compare" not in request.fixturenames:
        yield _fresh(tmp_path / "workspace")
        return
    root = SNAPSHOT_WORKSPACE
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(root, ignore_errors=True)
        yield _fresh(root)


def _fresh(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "notes.txt").write_text("hello world\nsecond line\n", encoding="utf-8")
    return root


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path
