"""The Trellis console: opens (or resumes) a session and shows it live.

The Agent is built by `engine.agent.open_agent` as every front end builds it; the app answers its
permission questions with a dialog and reads it only through its events and views.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel

from app.tui.following import FollowedSession
from app.tui.palette import TrellisCommands
from app.tui.screens.help import HelpScreen
from app.tui.screens.main import MainScreen
from app.tui.screens.model_picker import ModelPick, ModelPicker
from app.tui.screens.permission import PermissionDialog
from app.tui.screens.replay import ReplayScreen
from app.tui.screens.replay_following import load_replay_log
from app.tui.screens.sessions import SessionBrowser, SessionChoice
from app.tui.screens.trust import TrustDialog
from app.tui.scrollback import Scrollback, tail
from app.tui.widgets.welcome import Welcome
from engine.agent import Agent, open_agent
from engine.commands import REGISTRY
from engine.config import Config, DetectedModel, load_config_report
from engine.errors import TrellisError
from engine.events import ModelBind
from engine.gateway.base import Gateway, GatewayType
from engine.local_servers import LocalServer, ServerAnswer, ask, local_servers
from engine.model_catalog import ModelChoice, local_models, model_choices
from engine.os_text import storable_os_text
from engine.project_config import ProjectLayer
from engine.store.base import SessionInfo
from engine.store.chooser import Store, open_store
from engine.store.errors import LeaseError
from engine.store.search import SearchHit
from engine.store.settings import StoreSettings
from engine.tools import PermissionAnswer, PermissionQuestion, ToolRegistry
from engine.trust import TrustStore
from replay.transcript import transcript_of

if TYPE_CHECKING:
    from app.telemetry import LiveTelemetry

BROWSER_LIMIT = 500
BROWSER_SEARCH_LIMIT = 50
"""Text matches the session browser lists."""
"""Sessions the browser lists at most (newest first)."""


class TrellisApp(App[None]):
    """One session in the terminal; `run()` returns when the user quits."""

    TITLE = "Trellis"
    COMMANDS = App.COMMANDS | {TrellisCommands}
    CURSOR_BLINK: ClassVar[bool] = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help"),
        Binding("f4", "sessions", "Sessions"),
    ]

    def __init__(
        self,
        *,
        config: Config,
        cwd: Path,
        store_path: Path | None = None,
        store: StoreSettings | None = None,
        session_id: str | None = None,
        model: str | None = None,
        gateway: Gateway | None = None,
        script: Path | None = None,
        clock: Callable[[], float] = time.time,
        tools: ToolRegistry | None = None,
        replay: str | None = None,
        project: ProjectLayer | None = None,
        local_servers: Sequence[LocalServer] | None = None,
    ) -> None:
        super().__init__()
        self._config = config
        self._cwd = cwd
        self._store_path = store_path
        self._store_settings = store or StoreSettings()
        self._session_id = session_id
        self._model = model
        self._gateway = gateway
        self._script = script
        self._clock = clock
        self._tools = tools
        self._replay = replay
        self._project = project  # the project config as loaded: the trust dialog asks about it
        self._local_servers = local_servers  # None: the well-known ones, or the environment's
        self._found: dict[str, DetectedModel] = {}  # the local servers' models found so far
        self._answers: dict[str, ServerAnswer] = {}  # each server's latest answer, by name
        self._default_model = config.default_model  # what the picker shows; saving changes it
        self._welcome: Welcome | None = None
        self._picker: ModelPicker | None = None
        self.store: Store | None = None
        self.agent: Agent | None = None
        self.followed: FollowedSession | None = None  # a session another process writes
        self.error: str | None = None  # why the session could not open, shown after exit
        self._telemetry: LiveTelemetry | None = None  # made with the first session it traces

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notice is shown as written: what Trellis says carries text from the engine, a
        tool, a file or the model (`/plan` said `-  1. a` for `- [x] 1. a`), so no markup is
        ever read from it, whoever asks."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    async def on_mount(self) -> None:
        self._apply_theme()
        try:
            self.store = open_store(self._store_settings, path=self._store_path)
            await self.store.open()
            if self._replay is not None:
                await self._open_replay(self._replay)
            elif self._project is not None and self._project.skipped:
                await self.push_screen(TrustDialog(self._project), callback=self._trusted)
            else:
                await self._open_session(self._session_id)
        except TrellisError as exc:
            self.error = str(exc)
            self.exit(return_code=2)

    def _apply_theme(self) -> None:
        """The configured theme, if any; a name Textual does not know is reported in place and
        the default kept."""
        theme = self._config.console.theme
        if theme is None:
            return
        if theme in self.available_themes:
            self.theme = theme
        else:
            known = ", ".join(sorted(self.available_themes))
            self.notify(
                f"console.theme: no theme named {theme!r}; one of {known}",
                severity="error",
                timeout=30,
                markup=False,
            )

    async def _trusted(self, trust: bool | None) -> None:
        """After the trust dialog: record trust and load the whole config, or go on without."""
        try:
            if trust and self._project is not None:
                project = self._project
                await asyncio.to_thread(TrustStore().trust, project.directory, project.digest)
                loaded = await asyncio.to_thread(load_config_report, project.directory)
                self._config = loaded.config
                self._apply_theme()
                self.notify(f"trusted {project.file}", markup=False)
            await self._open_session(self._session_id)
        except TrellisError as exc:
            self.error = str(exc)
            self.exit(return_code=2)

    async def _open_session(self, session_id: str | None) -> None:
        """Open (or resume) a session and show it live; raises TrellisError when it cannot open.

        A resumed session shows its last turns first, from a range read; then the Agent loads the
        whole log and its events are bridged from the seq after the last one shown. Earlier turns
        load from the store as the user scrolls up, and far ones are dropped
        (`app.tui.scrollback`). A session another process writes is followed read-only instead
        (`app.tui.following`)."""
        assert self.store is not None
        self._welcome = self._welcome_of_new_session() if session_id is None else None
        screen = MainScreen(config=self._config, welcome=self._welcome)
        if session_id is not None:
            shown = await tail(self.store, session_id)
            start = shown[0].seq if shown else 0
            live = transcript_of(shown)
            scrollback = Scrollback(live, self.store, session_id, end=start)
            screen = MainScreen(live, scrollback, config=self._config)
        await self.push_screen(screen)
        try:
            self.agent = await self._agent_for(session_id)
        except LeaseError as held:
            if session_id is None:
                raise
            self.followed = await FollowedSession.open(self.store, screen, session_id, held)
            return
        self.agent.add_models(self._found)
        if self._welcome is not None and self._welcome.running is None:
            name = self.agent.model.name
            choices = self.agent.model_choices()
            self._welcome.running = next((c for c in choices if c.name == name), None)
        await screen.attach(self.agent, from_seq=screen.transcript.last_seq + 1)
        # once the open session is on screen: importing the HTTP client and asking the servers
        # must not compete with the first paint or the opening for the interpreter
        self.call_after_refresh(self._ask_local_servers, everywhere=False)

    async def on_main_screen_open_for_writing(self, _: MainScreen.OpenForWriting) -> None:
        """Ctrl+O on a followed session whose writer let go: open it here for writing (followed
        again, naming the new writer, if another process took it first)."""
        if self.followed is None:
            return
        try:
            await self._switch_to(self.followed.session_id)
        except TrellisError as exc:
            self.notify(str(exc), severity="error", markup=False)

    async def _agent_for(self, session_id: str | None) -> Agent:
        """The session's Agent, as every front end opens it (a resumed one loads its whole log),
        traced when `[telemetry] otlp_endpoint` is set."""
        if self._telemetry is None and self._config.telemetry.otlp_endpoint:
            from app.telemetry import LiveTelemetry

            self._telemetry = LiveTelemetry(self._config.telemetry)
        agent = await open_agent(
            config=self._config,
            cwd=self._cwd,
            store=self.store,
            model=self._model,
            session_id=session_id,
            gateway=self._gateway,
            script=self._script,
            responder=self.ask_permission,
            clock=self._clock,
            tools=self._tools,
            local_servers=self._local_servers,
        )
        if self._telemetry is not None:
            self._telemetry.watch(agent, self._config.models)
        return agent

    async def _open_replay(self, session_id: str, *, at_seq: int | None = None) -> None:
        """A stored session played back, read without its writer lease (`inspect`), and followed
        as another process writes it where the store can (`replay_following`)."""
        assert self.store is not None
        loaded = await load_replay_log(self.store, session_id)
        events = loaded.events
        binds = [e.data.model for e in events if isinstance(e.data, ModelBind)]
        provider = "scripted"
        if binds:
            # the wire shape of the requests the session sent: its last model's provider
            # (`ollama/qwen3` is a local server's, in OpenAI's shape)
            from engine.local_servers import local_servers
            from engine.model_catalog import provider_of

            known = self._config.with_models(self._found)
            provider = provider_of(known, binds[-1], local_servers()) or provider
        await self.push_screen(
            ReplayScreen(
                events,
                gateway_type=GatewayType(provider),
                config=self._config,
                title=loaded.info.title or loaded.info.id,
                followed=loaded.followed,
                at_seq=at_seq,
            )
        )

    # --- models ------------------------------------------------------------------------------------

    def _welcome_of_new_session(self) -> Welcome:
        name = self._model or self._config.default_model
        choices = self._choices()
        running = next((choice for choice in choices if choice.name == name), None)
        return Welcome(name, running, [choice for choice in choices if choice.detected])

    def _choices(self) -> tuple[ModelChoice, ...]:
        """Every entry a session may switch to, those found on local servers included."""
        if self.agent is not None:
            return self.agent.model_choices()
        return model_choices(self._config.with_models(self._found))

    def _ask_local_servers(self, *, everywhere: bool) -> None:
        """Ask the local servers for their models in the background (a worker): at the start
        those asked then (`LocalServer.at_start`), for the picker all of them."""
        servers = self._servers_to_ask(everywhere=everywhere)
        if servers:
            self.run_worker(self._asked(servers), group="local-servers")

    def _servers_to_ask(self, *, everywhere: bool) -> list[LocalServer]:
        if not self._config.discovery.local:
            return []
        try:
            servers = self._local_servers
            servers = local_servers() if servers is None else servers
        except TrellisError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return []
        return [server for server in servers if everywhere or server.at_start]

    async def _asked(self, servers: Sequence[LocalServer]) -> None:
        answers = await ask(servers)
        self._answers.update((answer.server.name, answer) for answer in answers)
        found = local_models(answers)
        self._found.update(found)
        if self.agent is not None:
            self.agent.add_models(found)
        choices = self._choices()
        if self._welcome is not None and self._welcome.is_attached:
            self._welcome.found = tuple(choice for choice in choices if choice.detected)
        if self._picker is not None:
            self._picker.offer(choices, tuple(self._answers.values()))

    async def action_pick_model(self) -> None:
        """`/model` without a name: the picker, while every local server is asked again."""
        if self.agent is None or (self._picker is not None and self._picker.is_attached):
            return
        from engine.paths import user_config_file

        servers = self._servers_to_ask(everywhere=True)
        self._picker = ModelPicker(
            self.agent.model_choices(),
            current=self.agent.model.next_name,
            default=self._default_model,
            config_file=await asyncio.to_thread(user_config_file),
            asking=[server.describe() for server in servers],
        )
        if servers:
            self.run_worker(self._asked(servers), group="local-servers")
        await self.push_screen(self._picker, callback=self._picked)

    async def _picked(self, pick: ModelPick | None) -> None:
        """Use the picked model from the next turn (as `/model NAME` does), after saving it as
        `default_model` when asked to."""
        self._picker = None
        agent = self.agent
        if pick is None or agent is None:
            return
        if pick.save and not await self._save_default(pick.name):
            return
        if pick.name == agent.model.next_name:
            if not pick.save:
                self.notify(f"{pick.name} is this session's model already", markup=False)
            return
        result = await REGISTRY.run(agent, f"/model {shlex.quote(pick.name)}")
        self.notify(
            result.text,
            severity="information" if result.ok else "error",
            title="/model",
            markup=False,
        )

    async def _save_default(self, name: str) -> bool:
        """`default_model = name` in the user config; says where, and when this project's own
        config names another default, which wins here."""
        from engine.config_writer import save_default_model

        try:
            path = await asyncio.to_thread(save_default_model, name)
        except TrellisError as exc:
            self.notify(str(exc), severity="error", title="default_model", markup=False)
            return False
        self._default_model = name
        self.notify(f"default_model = {json.dumps(name)} saved in {path}", markup=False)
        try:
            loaded = await asyncio.to_thread(load_config_report, self._cwd)
        except TrellisError:
            return True  # the next start reports it
        if loaded.config.default_model != name and loaded.project is not None:
            self.notify(
                f"{loaded.project.file} sets default_model = {loaded.config.default_model!r}, "
                "which wins in this project",
                severity="warning",
                markup=False,
            )
        return True

    # --- the session browser ---------------------------------------------------------------------

    async def action_help(self) -> None:
        """F1: the keys of the screen it is pressed on, and the slash commands."""
        if not isinstance(self.screen, HelpScreen):
            await self.push_screen(HelpScreen(self.screen))

    async def action_sessions(self) -> None:
        """F4: this directory's sessions, or every workspace's on a toggle."""
        if self.store is None:
            return
        # stored as the workspace is: a name that is not UTF-8 escaped (engine.os_text)
        here = await self.store.list(cwd=storable_os_text(str(self._cwd)), limit=BROWSER_LIMIT)
        everywhere = await self.store.list(limit=BROWSER_LIMIT)
        browser = SessionBrowser(
            here.sessions,
            everywhere.sessions,
            str(self._cwd),
            current=self._open_session_id(),
            write=self._write_export,
            search=self._search_text,
        )
        await self.push_screen(browser, callback=self._chosen)

    async def _search_text(self, query: str, cwd: str | None) -> list[SearchHit]:
        """The browser's search: what no process has indexed yet (a store from before the
        index) is indexed first, in batches."""
        assert self.store is not None
        if await self.store.unindexed():
            await self.store.update_index()
        scope = None if cwd is None else storable_os_text(cwd)
        return await self.store.search(query, cwd=scope, limit=BROWSER_SEARCH_LIMIT)

    def _open_session_id(self) -> str | None:
        """The session this console shows: its own, or the one it follows read-only."""
        if self.agent is not None:
            return self.agent.session_id
        return self.followed.session_id if self.followed is not None else None

    async def _chosen(self, choice: SessionChoice | None) -> None:
        if choice is None or self.store is None:
            return
        info = choice.session
        try:
            match choice.action:
                case "resume":
                    await self._switch_to(info.id)
                case "replay":
                    await self._open_replay(info.id, at_seq=choice.seq)
                case "fork":
                    fork = await self.store.fork(info.id, info.event_count)
                    self.notify(f"forked {info.id[:8]} into {fork.id[:8]}; opening the fork")
                    await self._switch_to(fork.id)
                case "delete":
                    if info.id == self._open_session_id():
                        self.notify("the open session cannot be deleted", severity="error")
                        return
                    from engine.checkpoints.sessions import delete_session
                    from engine.paths import data_dir

                    unpruned = await delete_session(self.store, info.id, data_dir())
                    self.notify(f"deleted {info.title or info.id[:8]}", markup=False)
                    if unpruned is not None:
                        self.notify(unpruned, severity="warning", markup=False)
        except TrellisError as exc:
            self.notify(str(exc), severity="error", title=choice.action, markup=False)

    async def _switch_to(self, session_id: str) -> None:
        """Close the open session (its lease given back) and open another live."""
        if self.agent is not None and session_id == self.agent.session_id:
            return
        if self.agent is not None:
            await self.agent.aclose()
            self.agent = None
        await self._stop_following()
        while len(self.screen_stack) > 1:
            self.pop_screen()
        await self._open_session(session_id)

    async def _write_export(
        self, info: SessionInfo, fmt: str, path: Path, *, overwrite: bool
    ) -> None:
        """The export dialog's writer: the stored log, read without its writer lease, rendered
        and written as `trellis export -o` does (`app.session_export`)."""
        from app.session_export import write_export

        assert self.store is not None
        loaded = await self.store.inspect(info.id)
        await write_export(loaded.info, loaded.events, fmt, path, overwrite=overwrite)

    async def ask_permission(self, question: PermissionQuestion) -> PermissionAnswer:
        """The responder the Agent awaits: a dialog; a cancelled turn withdraws it."""
        answered: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
        # the session's own workspace: a resumed session's may not be the folder Trellis started in
        workspace = Path(self.agent.workspace) if self.agent is not None else self._cwd
        dialog = PermissionDialog(question, workspace)

        def done(answer: PermissionAnswer | None) -> None:
            if not answered.done():
                answered.set_result(answer or PermissionAnswer.deny_once)

        await self.push_screen(dialog, callback=done)
        try:
            return await answered
        except asyncio.CancelledError:
            if dialog.is_attached:
                dialog.dismiss(None)
            raise

    async def _stop_following(self) -> None:
        followed, self.followed = self.followed, None
        if followed is not None:
            await followed.aclose()

    async def on_unmount(self) -> None:
        if self.agent is not None:
            await self.agent.aclose()
        if self._telemetry is not None:
            await asyncio.to_thread(self._telemetry.close)  # at most `[telemetry] timeout`
        await self._stop_following()
        if self.store is not None:
            await self.store.aclose()
