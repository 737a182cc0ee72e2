"""The session browser: this directory's sessions (all of them on a toggle), newest first, filtered by
typing; open one to resume, replay, fork, export or delete it (delete asks first)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Input, Label

from app.tui.widgets.key_footer import KeyFooter
from engine.counts import counted
from engine.store.base import SessionInfo

Action = Literal["resume", "replay", "fork", "export", "delete"]


@dataclass(frozen=True, slots=True)
class SessionChoice:
    """What the user chose to do with which session; the app carries it out."""

    action: Action
    session: SessionInfo


def matches(info: SessionInfo, words: str) -> bool:
    """Every typed word appears in the title, the id, the model or the workspace."""
    haystack = f"{info.title} {info.id} {info.model} {info.cwd}".lower()
    return all(word in haystack for word in words.lower().split())


class ConfirmDelete(ModalScreen[bool]):
    """Deleting is final: y deletes, anything else keeps the session."""

    DEFAULT_CSS = """
    ConfirmDelete { align: center middle; }
    ConfirmDelete > Vertical {
        width: 60; height: auto; border: thick $error; background: $surface; padding: 1 2;
    }
    ConfirmDelete Horizontal { height: auto; align-horizontal: center; margin-top: 1; }
    ConfirmDelete Button { margin: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Delete"),
        Binding("n,escape", "answer(False)", "Keep"),
    ]

    def __init__(self, info: SessionInfo) -> None:
        super().__init__()
        self.info = info

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                Text.assemble("Delete session ", (self.info.title or self.info.id[:8], "bold"), "?")
            )
            yield Label(
                Text(
                    f"{counted(self.info.event_count, 'event')}; this cannot be undone.",
                    style="dim",
                )
            )
            with Horizontal():
                yield Button(Content("[y] Delete"), id="yes", variant="error")
                yield Button(Content("[n] Keep"), id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class SessionBrowser(Screen[SessionChoice | None]):
    """Enter resumes; ^R replays, ^F forks, ^E exports, ^D deletes; ^A shows every workspace."""

    DEFAULT_CSS = """
    SessionBrowser Input { margin: 0 1; }
    SessionBrowser DataTable { height: 1fr; }
    """

    FOOTER_SPARE: ClassVar[tuple[str, ...]] = ("choose('export')", "choose('fork')", "toggle_all")
    """What the footer leaves out first when it is narrow (`KeyFooter`): the rarest actions."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "choose('resume')", "Resume", priority=True),
        Binding("ctrl+r", "choose('replay')", "Replay", priority=True),
        Binding("ctrl+f", "choose('fork')", "Fork", priority=True),
        Binding("ctrl+e", "choose('export')", "Export", priority=True),
        Binding("ctrl+d", "delete", "Delete", priority=True),
        Binding("ctrl+a", "toggle_all", "All workspaces", priority=True),
        Binding("escape", "close", "Back"),
        # F4 opened the browser and closes it: the app's F4 would stack another browser on it
        Binding("f4", "close", "Close", show=False),
        Binding("down", "move(1)", show=False),
        Binding("up", "move(-1)", show=False),
    ]

    show_all: reactive[bool] = reactive(False)

    def __init__(
        self, sessions: Sequence[SessionInfo], everywhere: Sequence[SessionInfo], cwd: str
    ) -> None:
        super().__init__()
        self.here = tuple(sessions)
        self.everywhere = tuple(everywhere)
        self.cwd = cwd
        self._shown: list[SessionInfo] = []

    def compose(self) -> ComposeResult:
        yield Label(id="scope")
        yield Input(placeholder="type to filter by title, id, model or workspace", id="filter")
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("title", "updated", "turns", "model", "id")
        self._fill()
        search = self.query_one(Input)
        search.cursor_blink = bool(getattr(self.app, "CURSOR_BLINK", True))
        search.focus()

    def watch_show_all(self, _: bool) -> None:
        if self.is_mounted:
            self._fill()

    @on(Input.Changed)
    def _filtered(self) -> None:
        self._fill()

    def _fill(self) -> None:
        words = self.query_one(Input).value
        pool = self.everywhere if self.show_all else self.here
        self._shown = [info for info in pool if matches(info, words)]
        scope = "every workspace" if self.show_all else self.cwd
        self.query_one("#scope", Label).update(
            Text.assemble(
                (" Sessions ", "bold"),
                f"of {scope}: {len(self._shown)}",
                ("  (ctrl+a toggles)", "dim"),
            )
        )
        table = self.query_one(DataTable)
        table.clear()
        for info in self._shown:
            when = datetime.fromtimestamp(info.updated).strftime("%Y-%m-%d %H:%M")
            table.add_row(
                Text(info.title) if info.title else Text("(untitled)", style="dim"),
                when,
                str(info.turns),
                Text(info.model),
                info.id[:8],
                key=info.id,
            )

    def _selected(self) -> SessionInfo | None:
        table = self.query_one(DataTable)
        if not self._shown or table.cursor_row < 0:
            return None
        return self._shown[min(table.cursor_row, len(self._shown) - 1)]

    def action_move(self, delta: int) -> None:
        table = self.query_one(DataTable)
        table.move_cursor(row=table.cursor_row + delta)

    def action_choose(self, action: Action) -> None:
        info = self._selected()
        if info is not None:
            self.dismiss(SessionChoice(action, info))

    def action_delete(self) -> None:
        info = self._selected()
        if info is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.dismiss(SessionChoice("delete", info))

        self.app.push_screen(ConfirmDelete(info), callback=confirmed)

    def action_toggle_all(self) -> None:
        self.show_all = not self.show_all

    def action_close(self) -> None:
        self.dismiss(None)
