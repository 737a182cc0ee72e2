"""The session browser: this directory's sessions (all of them on a toggle), newest first, filtered by
typing; open one to resume, replay, fork, export or delete it (delete asks first). A fork says
which session it came from, the session open in the console is marked current and cannot be
deleted from here.

What is typed also searches the sessions' text (`SessionStore.search`), once typing pauses, in a
worker on the event loop (the store's reads run on its own thread): the matches are listed under
the sessions, Tab moves between the two lists, and Enter on a match opens the replay at its seq."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import Button, DataTable, Input, Label

from app.session_rows import ID_SHOWN, fork_note, home_text, short_workspace, updated_text
from app.tui.screens.export import ExportDialog, SessionWriter
from app.tui.widgets.key_footer import KeyFooter
from app.tui.widgets.ordered_keys import OrderedInput
from engine.counts import counted
from engine.errors import TrellisError
from engine.store.base import SessionInfo
from engine.store.search import SearchHit

Action = Literal["resume", "replay", "fork", "delete"]

TITLE_MIN_WIDTH = 16
"""Columns the title keeps however narrow the screen (the table scrolls sideways then)."""
WORKSPACE_MIN_WIDTH = 12
"""Columns the workspace keeps (its tail: the project's folder) when the title needs room."""
MODEL_MAX_WIDTH = 16
"""Columns of the model column at most; a longer name ends in `…`."""
TITLE_BESIDE_MARKS = 8
"""Columns of the title kept on the line of its marks (`current`, the fork note); with less room
the marks go on a second line of the row."""


def fitted(text: str, width: int) -> Text:
    """`text` literally, on one line, cut to `width` with `…`."""
    cell = Text(text, no_wrap=True, overflow="ellipsis")
    cell.truncate(width, overflow="ellipsis")
    return cell


def title_cell(info: SessionInfo, current: str | None, width: int, accent: str) -> tuple[Text, int]:
    """The title cell and the row's height: the title, then `current` on the open session and
    the fork note on a fork. A fork starts with its parent's title and these tell the rows apart,
    so in a narrow column the title gives way to them (the fork note in its compact form when
    even alone it would not fit), and below `TITLE_BESIDE_MARKS` they take a second line."""
    marks = _marks(info, current, accent, compact=False)
    if marks.cell_len > width:
        marks = _marks(info, current, accent, compact=True)
    title = fitted(info.title or "(untitled)", width)
    if not info.title:
        title.stylize("dim")
    if not marks:
        return title, 1
    if title.cell_len + 2 + marks.cell_len <= width:
        return Text.assemble(title, "  ", marks, no_wrap=True), 1
    if width - 2 - marks.cell_len >= TITLE_BESIDE_MARKS:
        title.truncate(width - 2 - marks.cell_len, overflow="ellipsis")
        return Text.assemble(title, "  ", marks, no_wrap=True), 1
    marks.truncate(width, overflow="ellipsis")
    return Text.assemble(title, "\n", marks), 2


def _marks(info: SessionInfo, current: str | None, accent: str, *, compact: bool) -> Text:
    marks = Text(no_wrap=True)
    if info.id == current:
        marks.append("● current", style=f"bold {accent}")
    if note := fork_note(info, compact=compact):
        marks.append(("  " if marks else "") + note, style="dim")
    return marks


SEARCH_PAUSE = 0.25
"""Seconds of no typing before the text is searched."""
SEARCH_MIN_CHARS = 2
"""A query shorter than this searches nothing: one letter would match most of every log."""

ContentSearch = Callable[[str, str | None], Awaitable[Sequence[SearchHit]]]
"""The sessions' text searched for a query, of one workspace (None: of all), best first."""


@dataclass(frozen=True, slots=True)
class SessionChoice:
    """What the user chose to do with which session; the app carries it out. `seq`: where a
    replay opens (a search match), else at its start."""

    action: Action
    session: SessionInfo
    seq: int | None = None


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
                # Content, not a str: a str label is read as markup, and `[y]` vanished
                yield Button(Content("[y] Delete"), id="yes", variant="error")
                yield Button(Content("[n] Keep"), id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class SessionBrowser(Screen[SessionChoice | None]):
    """Enter resumes; ^R replays, ^F forks, ^E exports (a dialog asks format and file), ^D
    deletes; ^A shows every workspace."""

    DEFAULT_CSS = """
    SessionBrowser Input { margin: 0 1; }
    SessionBrowser DataTable { height: 1fr; }
    SessionBrowser #matches-head { margin-top: 1; }
    SessionBrowser .idle { display: none; }
    """

    FOOTER_SPARE: ClassVar[tuple[str, ...]] = ("export", "choose('fork')", "toggle_all")
    """What the footer leaves out first when it is narrow (`KeyFooter`): the rarest actions."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "choose('resume')", "Resume", priority=True),
        Binding("ctrl+r", "choose('replay')", "Replay", priority=True),
        Binding("ctrl+f", "choose('fork')", "Fork", priority=True),
        Binding("ctrl+e", "export", "Export", priority=True),
        Binding("ctrl+d", "delete", "Delete", priority=True),
        # on the open session Delete is shown disabled and this says why (`check_action`): the
        # key would otherwise reach the filter, where it deletes a character
        Binding("ctrl+d", "refuse_delete", show=False, priority=True),
        Binding("ctrl+a", "toggle_all", "All workspaces", priority=True),
        Binding("tab", "switch_list", "Matches", priority=True),
        Binding("escape", "close", "Back"),
        # F4 opened the browser and closes it: the app's F4 would stack another browser on it
        Binding("f4", "close", "Close", show=False),
        Binding("down", "move(1)", show=False, priority=True),
        Binding("up", "move(-1)", show=False, priority=True),
    ]

    show_all: reactive[bool] = reactive(False)

    def __init__(
        self,
        sessions: Sequence[SessionInfo],
        everywhere: Sequence[SessionInfo],
        cwd: str,
        *,
        current: str | None,
        write: SessionWriter,
        search: ContentSearch | None = None,
    ) -> None:
        super().__init__()
        self.search = search
        self.hits: list[SearchHit] = []
        self._in_hits = False
        """Whether the keys act on the text matches (Tab), not on the sessions."""
        self._searched: tuple[str, bool] | None = None
        """The query and scope the matches are of."""
        self._pause: Timer | None = None
        self.here = tuple(sessions)
        self.everywhere = tuple(everywhere)
        self.cwd = cwd
        self.current = current
        """The id of the session open in the console, if any."""
        self.write = write
        self._shown: list[SessionInfo] = []
        self._words = ""
        """The filter the list was last filled with."""
        self._home = home_text()

    def compose(self) -> ComposeResult:
        yield Label(id="scope")
        placeholder = "type to filter by title, id, model or workspace"
        if self.search is not None:
            placeholder += ", and to search the sessions' text"
        yield OrderedInput(placeholder=placeholder, id="filter")
        yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Label(id="matches-head", classes="idle")
        yield DataTable(id="hits", cursor_type="row", zebra_stripes=True, classes="idle")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._fill()
        search = self.query_one(Input)
        search.cursor_blink = bool(getattr(self.app, "CURSOR_BLINK", True))
        search.focus()

    def watch_show_all(self, _: bool) -> None:
        if self.is_mounted:
            self._fill(keep=True)
            self._search_soon()

    @on(Input.Changed)
    def _filtered(self, event: Input.Changed) -> None:
        # the field says it changed once when it mounts too; refilling then would move the
        # highlight back to the first row under an arrow key pressed meanwhile
        if event.value != self._words:
            self._fill()
        self._search_soon()

    # --- the sessions' text ----------------------------------------------------------------------

    def _search_soon(self) -> None:
        """Search what is typed once typing pauses; a shorter query clears the matches."""
        if self.search is None:
            return
        query = self.query_one(Input).value.strip()
        if (query, self.show_all) == self._searched:
            return
        if self._pause is not None:
            self._pause.stop()
            self._pause = None
        if len(query) < SEARCH_MIN_CHARS:
            self.workers.cancel_group(self, "search")
            self._searched = None
            self._show_hits([], "")
            return
        self._pause = self.set_timer(SEARCH_PAUSE, lambda: self._start_search(query))

    def _start_search(self, query: str) -> None:
        self._pause = None
        self.run_worker(self._run_search(query, self.show_all), group="search", exclusive=True)

    async def _run_search(self, query: str, everywhere: bool) -> None:
        assert self.search is not None
        self._show_head(Text("searching the sessions' text…", style="dim"))
        try:
            hits = list(await self.search(query, None if everywhere else self.cwd))
            note = ""
        except TrellisError as exc:  # a query still being typed (`"unclosed`), a store error
            hits, note = [], str(exc)
        self._searched = (query, everywhere)
        self._show_hits(hits, note)

    def _show_head(self, text: Text) -> None:
        head = self.query_one("#matches-head", Label)
        head.update(text)
        head.set_class(False, "idle")

    def _show_hits(self, hits: list[SearchHit], note: str) -> None:
        self.hits = hits
        table = self.query_one("#hits", DataTable)
        head = self.query_one("#matches-head", Label)
        shown = bool(hits or note)
        head.set_class(not shown, "idle")
        table.set_class(not hits, "idle")
        if note:
            head.update(Text(note, style="dim"))
        elif hits:
            head.update(
                Text.assemble(
                    (" Text matches", "bold"),
                    f": {len(hits)}",
                    ("  (tab switches lists, enter replays at the match)", "dim"),
                )
            )
        table.clear(columns=True)
        if not hits:
            self._use_hits(False)
            return
        fixed = {"session": 16, "turn": 4, "seq": 5, "kind": len("assistant")}
        spare = self.size.width - table.styles.scrollbar_size_vertical - sum(fixed.values())
        fixed["match"] = max(20, spare - 2 * table.cell_padding * (len(fixed) + 1))
        for label, size in fixed.items():
            table.add_column(label, width=size, key=label)
        accent = self.app.current_theme.accent or "bold"
        for hit in hits:
            snippet = Text(hit.snippet, no_wrap=True, overflow="ellipsis")
            for a, b in hit.marks:
                snippet.stylize(f"bold {accent}", a, b)
            table.add_row(
                fitted(hit.title or hit.session_id[:ID_SHOWN], 16),
                Text(str(hit.turn)),
                Text(str(hit.seq)),
                Text(hit.kind),
                snippet,
                key=f"{hit.session_id}:{hit.seq}",
            )
        self._use_hits(self._in_hits)

    def _use_hits(self, on: bool) -> None:
        """Point the keys at the matches (`on`) or the sessions; only that list shows a cursor."""
        self._in_hits = on and bool(self.hits)
        self.query_one("#sessions", DataTable).show_cursor = not self._in_hits
        self.query_one("#hits", DataTable).show_cursor = self._in_hits
        self.refresh_bindings()

    def action_switch_list(self) -> None:
        self._use_hits(not self._in_hits)

    def _hit(self) -> SearchHit | None:
        table = self.query_one("#hits", DataTable)
        if not self.hits or table.cursor_row < 0:
            return None
        return self.hits[min(table.cursor_row, len(self.hits) - 1)]

    def _session_of(self, hit: SearchHit) -> SessionInfo:
        """The listed session a match is in (a session past the listing's limit: its id)."""
        for info in self.everywhere:
            if info.id == hit.session_id:
                return info
        return SessionInfo(
            id=hit.session_id, cwd=hit.cwd, title=hit.title, created=hit.time, updated=hit.time
        )

    def on_resize(self) -> None:
        if self.is_mounted:
            self._fill(keep=True)

    def _fill(self, *, keep: bool = False) -> None:
        """The sessions that match the filter, the first highlighted (with `keep`, the one that
        was, if it is still listed)."""
        was = self._listed() if keep else None
        words = self._words = self.query_one(Input).value
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
        table = self.query_one("#sessions", DataTable)
        table.clear(columns=True)
        widths = self._widths(table)
        accent = self.app.current_theme.accent or "bold"
        titled = [title_cell(info, self.current, widths["title"], accent) for info in self._shown]
        for label, width in widths.items():
            table.add_column(label, width=width, key=label)
        for info, (title, height) in zip(self._shown, titled, strict=True):
            workspace = widths.get("workspace", 0)
            cells = {
                "workspace": short_workspace(info.cwd, home=self._home, width=workspace),
                "updated": updated_text(info),
                "turns": str(info.turns),
                "model": info.model,
                "id": info.id[:ID_SHOWN],
            }
            # Text, not str: a string cell is read as markup, and these are the user's words
            row = [fitted(cells[label], widths[label]) for label in widths if label != "title"]
            table.add_row(title, *row, key=info.id, height=height)
        if was is not None and was in self._shown:
            table.move_cursor(row=self._shown.index(was))
        self.refresh_bindings()

    def _widths(self, table: DataTable[object]) -> dict[str, int]:
        """Each column's width, in the order shown: every column as wide as its widest cell (a
        model name at most `MODEL_MAX_WIDTH`), the workspace and then the title sharing what is
        left of the screen. Set here, not measured by the table, so a resize refits them."""
        shown = self._shown
        widths = {
            "title": 0,
            "updated": len(updated_text(shown[0])) if shown else len("updated"),
            "turns": max([len("turns"), *(len(str(info.turns)) for info in shown)]),
            "model": min(MODEL_MAX_WIDTH, max([len("model"), *(len(i.model) for i in shown)])),
            "id": ID_SHOWN,
        }
        padding = 2 * table.cell_padding
        spare = self.size.width - table.styles.scrollbar_size_vertical
        spare -= sum(widths.values()) + padding * len(widths)
        if self.show_all:
            natural = [short_workspace(info.cwd, home=self._home) for info in shown]
            workspace = max([len("workspace"), *map(len, natural)])
            spare -= padding
            workspace = min(workspace, max(WORKSPACE_MIN_WIDTH, spare * 2 // 5))
            spare -= workspace
            widths = {"title": 0, "workspace": workspace, **widths}
        widths["title"] = max(TITLE_MIN_WIDTH, spare)
        return widths

    @on(DataTable.RowHighlighted)
    def _row_changed(self) -> None:
        self.refresh_bindings()  # Delete is off on the open session's row

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Delete shows disabled on the open session's row, where `refuse_delete` takes its key;
        Tab shows once something matched (a narrow footer keeps its room for the other keys until
        then)."""
        if action == "switch_list":
            return self.search is not None and bool(self.hits)
        on_current = (info := self._selected()) is not None and info.id == self.current
        if action == "delete":
            return None if on_current else True
        if action == "refuse_delete":
            return on_current
        return True

    def _selected(self) -> SessionInfo | None:
        """The session the keys act on: the highlighted one, or the highlighted match's."""
        if self._in_hits:
            hit = self._hit()
            return None if hit is None else self._session_of(hit)
        return self._listed()

    def _listed(self) -> SessionInfo | None:
        if not self._shown:
            return None
        table = self.query_one("#sessions", DataTable)
        if table.cursor_row < 0:
            return None
        return self._shown[min(table.cursor_row, len(self._shown) - 1)]

    def _after_typing(self, act: Callable[[SessionInfo], object]) -> None:
        """Run `act` on the highlighted session once the filter has taken every key typed before
        this one. The row keys are priority bindings, run as their key arrives, while the field
        takes the characters typed just before (a paste, a fast typist) only when it gets to
        them: it runs `act` after those, on the list they leave."""

        def run() -> None:
            if not self.is_current:  # a key before this one closed the browser
                return
            if self.query_one(Input).value != self._words:
                self._fill()
            if (info := self._selected()) is not None:
                act(info)

        self.query_one(Input).call_later(run)

    def action_move(self, delta: int) -> None:
        def move(_: SessionInfo) -> None:
            table = self.query_one("#hits" if self._in_hits else "#sessions", DataTable)
            table.move_cursor(row=table.cursor_row + delta)

        self._after_typing(move)

    def action_choose(self, action: Action) -> None:
        """On a text match, Enter and ^R replay from its seq; the other keys act on its
        session."""

        def choose(info: SessionInfo) -> None:
            hit = self._hit() if self._in_hits else None
            if hit is not None and action in ("resume", "replay"):
                self.dismiss(SessionChoice("replay", info, seq=hit.seq))
            else:
                self.dismiss(SessionChoice(action, info))

        self._after_typing(choose)

    def action_export(self) -> None:
        """A dialog asks the format and the file; the browser stays open behind it."""
        self._after_typing(self._export)

    def _export(self, info: SessionInfo) -> None:
        def written(path: Path | None) -> None:
            if path is not None:
                self.notify(f"exported {info.title or info.id[:ID_SHOWN]} to {path}", markup=False)

        dialog = ExportDialog(info, folder=Path(self.cwd), write=self.write)
        self.app.push_screen(dialog, callback=written)

    def action_delete(self) -> None:
        self._after_typing(self._delete)

    def action_refuse_delete(self) -> None:
        self._after_typing(self._delete)

    def _delete(self, info: SessionInfo) -> None:
        """Ask, then delete; on the open session say why not (the row the key found may have
        changed under the keys typed before it, so this decides again)."""
        if info.id == self.current:
            self.notify(
                "This is the session open in the console: open another one first to delete it.",
                severity="warning",
                markup=False,
            )
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.dismiss(SessionChoice("delete", info))

        self.app.push_screen(ConfirmDelete(info), callback=confirmed)

    def action_toggle_all(self) -> None:
        self.show_all = not self.show_all

    def action_close(self) -> None:
        self.dismiss(None)
