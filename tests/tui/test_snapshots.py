"""How the console looks: SVG snapshots of its screens, compared with the baselines in `snapshots/`.

Every scene runs the real app on the scripted model with a fixed clock, so the pictures are the same
on every run. Update a baseline only with a deliberate change to the look (`--snapshot-update`), and
look at the changed SVG first.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.app import App
from textual.pilot import Pilot

from app.tui.screens.model_picker import ModelPicker
from app.tui.screens.permission import PermissionDialog
from app.tui.screens.sessions import ContentSearch, SessionBrowser
from app.tui.widgets.key_footer import FooterKey
from app.tui.widgets.prompt_input import PromptInput
from engine.config import Config, ContextConfig, ModelEntry, load_config
from engine.gateway.scripted import Reply
from engine.local_servers import WELL_KNOWN, LocalModel, ServerAnswer
from engine.message import ToolCall
from engine.model_catalog import local_models
from engine.store.base import SessionInfo
from engine.store.search import SearchHit
from engine.tools import ToolRegistry
from engine.tools.builtins.files import ReadFile, WriteFile
from tests.agent.conftest import FixedTool, GateTool
from tests.tui.conftest import ConsoleTestApp

SnapCompare = Callable[..., bool]
Scene = Callable[[Pilot[None]], Awaitable[None]]

READ = [
    Reply(
        text="I will read the notes.",
        tool_calls=[ToolCall("r1", "read_file", {"path": "notes.txt"})],
    ),
    Reply(text="The notes say **hello world**; the second line is `second line`."),
]


async def opened(pilot: Pilot[None]) -> ConsoleTestApp:
    app = pilot.app
    assert isinstance(app, ConsoleTestApp)
    for _ in range(500):
        if app.agent is not None and len(app.screen_stack) > 1:
            break
        await pilot.pause(0.01)
    await pilot.pause()
    return app


async def type_and_send(pilot: Pilot[None], text: str) -> None:
    app = await opened(pilot)
    prompt = app.main.query_one(PromptInput)
    prompt.load_text(text)
    await pilot.press("enter")
    await app.live.when_idle()
    await pilot.pause()
    await pilot.pause()


def scene(*prompts: str, keys: tuple[str, ...] = ()) -> Scene:
    async def run(pilot: Pilot[None]) -> None:
        await opened(pilot)
        for text in prompts:
            await type_and_send(pilot, text)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()

    return run


@pytest.fixture
def make(workspace: Path, data: Path) -> Callable[..., ConsoleTestApp]:
    def build(replies: list[Reply], **kwargs: object) -> ConsoleTestApp:
        return ConsoleTestApp(workspace, data, replies, **kwargs)  # type: ignore[arg-type]

    return build


def test_idle(snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]) -> None:
    assert snap_compare(make([]), terminal_size=(100, 30), run_before=scene())


def test_a_reply_with_a_tool_card(
    snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]
) -> None:
    app = make(READ, tools=ToolRegistry([ReadFile()]))
    assert snap_compare(app, terminal_size=(100, 30), run_before=scene("read notes.txt"))


def test_an_injected_context_card(
    snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]
) -> None:
    app = make([Reply(text="Thanks, noted that the build is green.")])
    run = scene("/inject the build is green on main", "what do you know?")
    assert snap_compare(app, terminal_size=(100, 30), run_before=run)


def test_read_only_mode_refuses_a_write(
    snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]
) -> None:
    """F5 twice: read-only, named in the status line and the transcript; a write is refused with
    no dialog, and the tool card says why."""
    write = ToolCall("w1", "write_file", {"path": "new.txt", "content": "x"})
    app = make(
        [Reply(text="Writing it.", tool_calls=[write]), Reply(text="It was refused.")],
        tools=ToolRegistry([WriteFile()]),
    )

    async def run(pilot: Pilot[None]) -> None:
        await opened(pilot)
        await pilot.press("f5", "f5")
        await pilot.pause()
        await type_and_send(pilot, "write new.txt")

    assert snap_compare(app, terminal_size=(100, 30), run_before=run)


def test_side_panel_with_areas_and_gc(
    snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]
) -> None:
    app = make(
        [
            Reply(text="Working on the build."),
            Reply(tool_calls=[ToolCall("s1", "subtask_done", {"result": "fixed the build"})]),
            Reply(text="The build is fixed."),
        ]
    )
    run = scene("/notice the CI is red", "/subtask fix the build", "finish it", keys=("f2", "f2"))
    assert snap_compare(app, terminal_size=(120, 34), run_before=run)


def test_the_context_inspector(
    snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]
) -> None:
    app = make(READ, tools=ToolRegistry([ReadFile()]))
    run = scene("/inject ci is green", "read notes.txt", keys=("f3",))
    assert snap_compare(app, terminal_size=(120, 34), run_before=run)


def test_the_budget_tab_by_category(
    snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp], workspace: Path
) -> None:
    """F8: what fills the window (instruction file, pin, Area, injected context, tool result)
    and the largest parts, the keyboard on them."""
    (workspace / "AGENTS.md").write_text("Keep answers short.\n" * 12)
    config = Config(models={"scripted": ModelEntry(provider="scripted", context_window=32_000)})
    app = make(READ, tools=ToolRegistry([ReadFile()]), config=config)
    run = scene(
        "/pin run the tests first",
        "/watch notes.txt",
        "/inject ci is green",
        "read notes.txt",
        keys=("f8",),
    )
    assert snap_compare(app, terminal_size=(120, 34), run_before=run)


def test_the_permission_dialog(
    snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]
) -> None:
    app = make(
        [Reply(tool_calls=[ToolCall("d1", "danger", {"command": "rm -rf build && make"})])],
        tools=ToolRegistry([FixedTool("danger", needs_permission=True)]),
    )

    assert snap_compare(app, terminal_size=(100, 30), run_before=asked("clean and build"))


def asked(prompt: str) -> Scene:
    """Send `prompt` and wait for the permission dialog, with the change it shows read."""

    async def run(pilot: Pilot[None]) -> None:
        app = await opened(pilot)
        app.main.query_one(PromptInput).load_text(prompt)
        await pilot.press("enter")
        for _ in range(500):
            if isinstance(app.screen, PermissionDialog) and not app.screen.reading:
                break
            await pilot.pause(0.01)
        await pilot.pause()

    return run


def test_the_permission_dialog_with_a_diff(
    snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp], workspace: Path
) -> None:
    lines = [
        f"    step_{n} = run(step_{n - 1})" if n > 1 else "def pipeline():" for n in range(1, 31)
    ]
    lines[11] = "    # [bold]kept as written[/], [x] too"
    (workspace / "pipeline.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    old = "".join(f"{line}\n" for line in lines[13:22])
    new = "".join(f"{line.replace('run(', 'retry(')}\n" for line in lines[13:22])
    edit = {"path": "pipeline.py", "old": old, "new": new}
    app = make([Reply(tool_calls=[ToolCall("e1", "edit_file", edit)])])
    assert snap_compare(app, terminal_size=(100, 30), run_before=asked("retry the middle steps"))


def test_the_permission_dialog_for_a_command(
    snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]
) -> None:
    command = "rm -rf build && make -j4 all && ./scripts/check --strict --report build/report.txt"
    app = make([Reply(tool_calls=[ToolCall("s1", "run_shell", {"command": command})])])
    assert snap_compare(app, terminal_size=(100, 30), run_before=asked("clean and build"))


def test_a_budget_overflow(snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]) -> None:
    config = Config(context=ContextConfig(char_cap=200))
    app = make([Reply(text="unreachable")], config=config)
    assert snap_compare(app, terminal_size=(100, 30), run_before=scene("x" * 400))


def test_an_egress_refusal(
    snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp], workspace: Path
) -> None:
    (workspace / ".env").write_text("TOKEN=not-for-the-cloud\n", encoding="utf-8")
    config = Config(
        default_model="cloud",
        models={"cloud": ModelEntry(provider="scripted", egress="internal")},
    )
    app = make(
        [
            Reply(tool_calls=[ToolCall("r1", "read_file", {"path": ".env"})]),
            Reply(text="never sent"),
        ],
        config=config,
        tools=ToolRegistry([ReadFile()]),
    )
    assert snap_compare(app, terminal_size=(100, 30), run_before=scene("read .env"))


def test_help(snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]) -> None:
    assert snap_compare(make([]), terminal_size=(100, 30), run_before=scene(keys=("f1",)))


def test_the_welcome_at_80_by_24_with_a_key_found(
    snap_compare: SnapCompare,
    make: Callable[..., ConsoleTestApp],
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-snapshot")
    app = make([], config=load_config(workspace, user_file=workspace / "no-config.toml"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=scene())


def test_the_model_picker(
    snap_compare: SnapCompare,
    make: Callable[..., ConsoleTestApp],
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-snapshot")
    user = workspace / "user.toml"
    user.write_text(
        '[models.work]\nprovider = "anthropic"\nmodel = "claude-sonnet-5-5"\n', encoding="utf-8"
    )
    ollama = ServerAnswer(
        server=WELL_KNOWN[0],
        models=(LocalModel(id="qwen3:8b"), LocalModel(id="gpt-oss:20b", context_window=131072)),
    )
    config = load_config(workspace, user_file=user).with_models(local_models([ollama]))

    async def run(pilot: Pilot[None]) -> None:
        app = await opened(pilot)
        app.main.query_one(PromptInput).load_text("/model")
        await pilot.press("enter")
        for _ in range(500):
            if isinstance(app.screen, ModelPicker):
                break
            await pilot.pause(0.01)
        await pilot.pause()
        await pilot.press("down")
        await pilot.pause()

    assert snap_compare(make([], config=config), terminal_size=(100, 30), run_before=run)


def test_80_by_24(snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]) -> None:
    app = make(READ, tools=ToolRegistry([ReadFile()]))
    assert snap_compare(app, terminal_size=(80, 24), run_before=scene("read notes.txt"))


async def fixed_matches(query: str, cwd: str | None) -> list[SearchHit]:
    """Two matches of `cache` in the sessions the browser lists."""
    return [
        SearchHit(
            session_id="2" * 32,
            title="why does the build fail on CI?",
            cwd="/home/ada/project",
            seq=seq,
            turn=turn,
            time=1_796_007_300.0,
            kind=kind,
            type=kind_type,
            score=score,
            snippet=text,
            marks=((text.index("cache"), text.index("cache") + 5),),
        )
        for seq, turn, kind, kind_type, score, text in (
            (
                14,
                1,
                "assistant",
                "assistant/message",
                3.2,
                "The CI cache is keyed on the lock file, so a changed lock…",
            ),
            (31, 2, "tool", "tool/result", 1.7, "…restored cache from key deps-3f9a; 412 files…"),
        )
    ]


class BrowserApp(App[None]):
    """The browser alone, over fixed sessions: ids, times and paths are the same on every run.
    The third session is open, and forked once; one more session is in another workspace."""

    CURSOR_BLINK = False

    def __init__(self, search: ContentSearch | None = None) -> None:
        super().__init__()
        self.search = search

    def on_mount(self) -> None:
        here = [
            SessionInfo(
                id=f"{n:x}" * 32,
                cwd="/home/ada/project",
                title=title,
                model=model,
                parent_id=parent,
                fork_seq=None if parent is None else 40,
                created=1_796_000_000.0 + 3600 * n,
                updated=1_796_000_000.0 + 3600 * n + 600,
                event_count=20 * n,
                turns=n,
            )
            for n, title, model, parent in (
                (4, "fix the flaky store test", "local", "3" * 32),
                (3, "fix the flaky store test", "local", None),
                (2, "why does the build fail on CI?", "scripted", None),
                (1, "read the README and summarize", "scripted", None),
            )
        ]
        elsewhere = SessionInfo(
            id="a" * 32,
            cwd="/srv/builds/clients/acme/release-tooling/scripts",
            title="plan the release",
            model="cloud",
            created=1_795_000_000.0,
            updated=1_795_000_600.0,
            event_count=44,
            turns=4,
        )
        browser = SessionBrowser(
            here,
            [*here, elsewhere],
            "/home/ada/project",
            current="3" * 32,
            write=unwritten,
            search=self.search,
        )
        self.push_screen(browser)


async def unwritten(info: SessionInfo, fmt: str, path: Path, *, overwrite: bool) -> None:
    raise AssertionError("a snapshot writes no file")


@pytest.fixture
def fixed_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """The times in UTC (they are shown in local time) and the home that `~` stands for."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setenv("HOME", "/home/ada")


@pytest.mark.usefixtures("fixed_place")
def test_the_session_browser(snap_compare: SnapCompare) -> None:
    """A fork says of what, the open session says current; on its row Delete is dimmed."""

    async def run(pilot: Pilot[None]) -> None:
        await pilot.pause()
        await pilot.press("down")

    assert snap_compare(BrowserApp(), terminal_size=(100, 24), run_before=run)


@pytest.mark.usefixtures("fixed_place")
def test_the_session_browser_filtered(snap_compare: SnapCompare) -> None:
    async def run(pilot: Pilot[None]) -> None:
        await pilot.pause()
        await pilot.press(*"build")

    assert snap_compare(BrowserApp(), terminal_size=(100, 24), run_before=run)


@pytest.mark.usefixtures("fixed_place")
def test_the_session_browser_with_text_matches(snap_compare: SnapCompare) -> None:
    """What is typed searches the text too: the matches under the sessions, Tab moved to them."""

    async def run(pilot: Pilot[None]) -> None:
        await pilot.pause()
        await pilot.press(*"cache")
        screen = pilot.app.screen
        assert isinstance(screen, SessionBrowser)
        for _ in range(200):
            if screen.hits:
                break
            await pilot.pause(0.01)
        await pilot.press("tab")
        await pilot.pause()

    assert snap_compare(BrowserApp(fixed_matches), terminal_size=(100, 24), run_before=run)


@pytest.mark.usefixtures("fixed_place")
def test_the_session_browser_of_every_workspace(snap_compare: SnapCompare) -> None:
    """Ctrl+A: a workspace column, `~` for home, a long path's tail."""

    async def run(pilot: Pilot[None]) -> None:
        await pilot.pause()
        await pilot.press("ctrl+a")

    assert snap_compare(BrowserApp(), terminal_size=(100, 24), run_before=run)


@pytest.mark.usefixtures("fixed_place")
def test_the_session_browser_of_every_workspace_at_80_by_24(snap_compare: SnapCompare) -> None:
    """Narrow: the title gives way to its marks, which take a second line when it must."""

    async def run(pilot: Pilot[None]) -> None:
        await pilot.pause()
        await pilot.press("ctrl+a")

    assert snap_compare(BrowserApp(), terminal_size=(80, 24), run_before=run)


@pytest.mark.usefixtures("fixed_place")
def test_the_export_dialog(snap_compare: SnapCompare) -> None:
    """Ctrl+E: the format (JSON chosen), the file in the workspace, the dialog's keys."""

    async def run(pilot: Pilot[None]) -> None:
        await pilot.pause()
        await pilot.press("ctrl+e")
        await pilot.pause()
        await pilot.press("down")
        await pilot.pause()

    assert snap_compare(BrowserApp(), terminal_size=(100, 24), run_before=run)


def test_a_turn_in_progress(snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]) -> None:
    gate = GateTool()
    app = make(
        [Reply(text="Building now; this takes a while.", tool_calls=[ToolCall("g1", "gate", {})])],
        tools=ToolRegistry([gate]),
    )

    async def run(pilot: Pilot[None]) -> None:
        app = await opened(pilot)
        app.main.query_one(PromptInput).load_text("build it")
        await pilot.press("enter")
        await gate.started.wait()
        for _ in range(500):  # the footer offers Esc once it has recomposed for the open turn
            if any(key.item.key == "escape" for key in app.main.query(FooterKey)):
                break
            await pilot.pause(0.01)
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=run)


def test_a_long_session_opens_at_its_end(
    snap_compare: SnapCompare, workspace: Path, data: Path
) -> None:
    import asyncio

    from engine.agent import open_agent
    from engine.gateway.scripted import ScriptedGateway
    from engine.store.sqlite.store import SQLiteStore
    from tests.tui.conftest import fixed_clock

    async def long_session() -> str:
        replies = [Reply(text=f"Answer number {n}.") for n in range(1, 61)]
        async with SQLiteStore(data / "sessions.sqlite") as store:
            agent = await open_agent(
                config=Config(),
                cwd=workspace,
                store=store,
                gateway=ScriptedGateway(replies),
                clock=fixed_clock(),
            )
            for n in range(1, 61):
                await agent.send(f"question number {n}")
            await agent.aclose()
            return agent.session_id

    session_id = asyncio.run(long_session())
    app = ConsoleTestApp(workspace, data, [], session_id=session_id)
    assert snap_compare(app, terminal_size=(100, 30), run_before=scene())


def test_a_light_theme(snap_compare: SnapCompare, make: Callable[..., ConsoleTestApp]) -> None:
    app = make(READ, tools=ToolRegistry([ReadFile()]))

    async def run(pilot: Pilot[None]) -> None:
        pilot.app.theme = "textual-light"
        await scene("/inject the build is green", "read notes.txt")(pilot)

    assert snap_compare(app, terminal_size=(100, 30), run_before=run)
