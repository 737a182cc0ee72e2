"""The export dialog (Ctrl+E in the session browser): which format, which file; an existing file is
replaced only when the user says so, and a file that cannot be written is said in place, the
dialog still open to pick another."""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import ClassVar, Protocol

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList
from textual.widgets.option_list import Option

from app.session_rows import ID_SHOWN
from app.tui.widgets.key_footer import KeyFooter
from app.tui.widgets.ordered_keys import OrderedInput
from engine.errors import TrellisError
from engine.store.base import SessionInfo

FORMATS: tuple[tuple[str, str], ...] = (
    ("md", "Markdown"),
    ("json", "JSON, the header and every event"),
    ("html", "HTML, one self-contained page"),
)
"""The formats of `trellis export`, in the order the dialog lists them (the first is chosen)."""


class SessionWriter(Protocol):
    """Writes a stored session to `path` in `fmt`, as `app.session_export.write_export`: raises
    `ExportTargetExists` for an existing file unless `overwrite`, another `TrellisError` for a
    file it cannot write."""

    async def __call__(self, info: SessionInfo, fmt: str, path: Path, *, overwrite: bool) -> None:
        """Write it, or raise."""
        ...


def default_file(info: SessionInfo, fmt: str) -> str:
    """`./trellis-1a2b3c4d.md`: in the workspace the console runs in, where `trellis export -o`
    given a bare name writes too, and which exists on a machine reached over ssh, where a
    downloads folder often does not."""
    return f"./trellis-{info.id[:ID_SHOWN]}.{fmt}"


def with_format(text: str, fmt: str) -> str:
    """The path typed, its extension changed to `fmt`'s when it has a format's extension."""
    suffix = PurePath(text).suffix
    if suffix in {f".{name}" for name, _ in FORMATS}:
        return text[: -len(suffix)] + f".{fmt}"
    return text


class FormatList(OptionList):
    """The formats: ↑/↓ choose one, Enter exports. Enter is said as a message that follows the
    list's own highlight messages, so the export sees the format the keys before it chose (a
    priority binding on the screen would run before the list had taken them)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "choose", "Export")]

    class Chosen(Message):
        """Enter on the list: export in the highlighted format."""

    def action_choose(self) -> None:
        self.post_message(self.Chosen())


class FileField(OrderedInput):
    """The file to write; Enter exports (the footer says so)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "submit", "Export")]


class ExportDialog(ModalScreen[Path | None]):
    """Dismissed with the file written, or None when cancelled."""

    DEFAULT_CSS = """
    ExportDialog { align: center middle; }
    ExportDialog > Vertical {
        width: 72; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; border-title-style: bold; background: $surface; padding: 0 1;
    }
    ExportDialog .heading { text-style: bold; margin-top: 1; }
    ExportDialog OptionList { height: auto; border: none; padding: 0; }
    ExportDialog #file { margin: 0; }
    ExportDialog #message { width: 100%; height: auto; min-height: 1; }
    ExportDialog #message.-error { color: $error; }
    ExportDialog #message.-ask { color: $warning; }
    ExportDialog Horizontal { height: auto; align-horizontal: right; }
    ExportDialog Button { margin: 0 0 0 2; min-width: 10; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, info: SessionInfo, *, folder: Path, write: SessionWriter) -> None:
        super().__init__()
        self.info = info
        self.folder = folder
        self.write = write
        self.asked: tuple[str, Path] | None = None
        """The format and file the user was told exist: exporting them again replaces it."""
        self.writing = False

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Export session"
            title = self.info.title or "(untitled)"
            yield Label(Text.assemble(title, "  ", (self.info.id[:ID_SHOWN], "dim")))
            yield Label("Format  (↑/↓)", classes="heading")
            yield FormatList(
                *(
                    Option(Text.assemble((f".{name:<5}", "bold"), label), id=name)
                    for name, label in FORMATS
                ),
                id="format",
            )
            yield Label(
                Text.assemble(
                    "File", ("  a relative path is in ", "dim"), (str(self.folder), "dim")
                ),
                classes="heading",
            )
            yield FileField(default_file(self.info, FORMATS[0][0]), id="file")
            yield Label(id="message")
            with Horizontal():
                yield Button("Export", id="export", variant="primary")
                yield Button("Cancel", id="cancel")
        yield KeyFooter()

    def on_mount(self) -> None:
        formats = self.query_one(OptionList)
        formats.highlighted = 0
        formats.focus()
        self.query_one(Input).cursor_blink = bool(getattr(self.app, "CURSOR_BLINK", True))

    @property
    def fmt(self) -> str:
        option = self.query_one(OptionList).highlighted_option
        return FORMATS[0][0] if option is None or option.id is None else option.id

    @on(OptionList.OptionHighlighted)
    def _format_chosen(self) -> None:
        file = self.query_one(Input)
        file.value = with_format(file.value, self.fmt)
        self._say("")

    @on(Input.Changed)
    def _file_edited(self) -> None:
        if not self.writing:  # a change typed before Enter may arrive after it
            self._say("")

    @on(FormatList.Chosen)
    @on(Input.Submitted)
    def _entered(self) -> None:
        self.action_export()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "export":
            self.action_export()
        else:
            self.action_cancel()

    def action_export(self) -> None:
        if self.writing:
            return
        text = self.query_one(Input).value.strip()
        if not text:
            self._say("Name the file to write.", "-error")
            return
        try:
            path = Path(text).expanduser()
        except RuntimeError:  # `~` with no home known
            self._say(f"Cannot tell which folder {text} names.", "-error")
            return
        if not path.is_absolute():
            path = self.folder / path
        fmt = self.fmt
        overwrite = self.asked == (fmt, path)
        self.writing = True
        self._say("Writing…")
        self._export(fmt, path, overwrite=overwrite)

    @work(group="export")
    async def _export(self, fmt: str, path: Path, *, overwrite: bool) -> None:
        from app.session_export import ExportTargetExists

        try:
            await self.write(self.info, fmt, path, overwrite=overwrite)
        except ExportTargetExists:
            self.writing = False
            self._say(f"{path} exists. Enter replaces it; or change the file.", "-ask")
            self.asked = (fmt, path)  # after `_say`, which forgets any earlier question
            self.query_one("#export", Button).label = "Replace"
            return
        except TrellisError as exc:
            self.writing = False
            self._say(str(exc), "-error")
            return
        self.dismiss(path)

    def _say(self, message: str, kind: str = "") -> None:
        """Show `message` under the file (literally: paths may hold brackets); a new message
        withdraws the question whether to replace a file."""
        shown = self.query_one("#message", Label)
        shown.update(Text(message))
        shown.set_class(kind == "-error", "-error")
        shown.set_class(kind == "-ask", "-ask")
        if self.asked is not None:
            self.asked = None
            self.query_one("#export", Button).label = "Export"

    def action_cancel(self) -> None:
        self.dismiss(None)
