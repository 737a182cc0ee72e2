"""The rewind screens (`/rewind`, or Esc twice on an empty prompt while idle): the session's
prompts newest first, with when each was sent and the files its turn changed; Enter on one asks
what to take back — code and conversation, the conversation only, or the code only — saying
first which files will be written and removed, which were changed by someone else since (kept
unless the user says to overwrite them), and what no rewind brings back.

Nothing here touches the session: the list and the dialog only read the Agent's plan
(`Agent.plan_rewind`) and are dismissed with a `RewindRequest`, which the main screen carries
out (`Agent.rewind`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Checkbox, DataTable, OptionList, Static
from textual.widgets.option_list import Option

from app.tui.widgets.key_footer import KeyFooter
from engine.agent.code_rewind import CodePlan
from engine.agent.rewind import RewindPoint, RewindResult, RewoundTurn
from engine.errors import TrellisError
from engine.rewind_report import files_summary
from engine.text_lines import first_line
from replay.wording import rewind_words

UNDO_KEY = "undo"
"""The row key of "Undo the last rewind" in the list."""
PROMPT_CHARS = 60
"""A prompt's first line is cut here in the list (the table cuts it again to its width)."""


@dataclass(frozen=True, slots=True)
class RewindRequest:
    """What the user chose: the turn to go back before (None: undo the last rewind), what to
    take back, and whether files changed by someone else since are overwritten."""

    to_turn: int | None
    conversation: bool
    code: bool
    overwrite: bool = False


Planner = Callable[[int | None], Awaitable[tuple[RewindPoint, CodePlan | None]]]
"""`Agent.plan_rewind` with the code part asked for: what a rewind to a turn (None: the undo)
would do, before anything is touched."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One answer of the dialog."""

    id: str
    label: str
    conversation: bool
    code: bool


CHOICES = (
    Choice("both", "Code and conversation", conversation=True, code=True),
    Choice("conversation", "Conversation only", conversation=True, code=False),
    Choice("code", "Code only", conversation=False, code=True),
)
CANCEL = "cancel"


def sent_at(time: float) -> str:
    """When a prompt was sent, in the local time, to the second."""
    return datetime.fromtimestamp(time).strftime("%Y-%m-%d %H:%M:%S")


class RewindTable(DataTable[str | Text]):
    """The prompts, one a row; Enter chooses the highlighted one. The table's own key, not the
    screen's, so arrows typed before it move the highlight first (`ModelTable`)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select_cursor", "Choose")]


class RewindList(Screen[RewindRequest | None]):
    """The prompts a rewind can go back to, newest first; Enter asks what to take back, Esc
    closes. A screen, not a modal one: the app's keys (F1) work on it."""

    DEFAULT_CSS = """
    RewindList > Vertical {
        height: 1fr; border: round $primary; background: $surface; padding: 0 1;
        border-title-color: $text; border-title-style: bold;
    }
    RewindList #title { height: auto; margin-bottom: 1; }
    RewindList DataTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Back")]

    def __init__(
        self, points: Sequence[RewoundTurn], *, undo: RewindPoint | None, planner: Planner
    ) -> None:
        super().__init__()
        self.points = tuple(reversed(points))  # newest first
        self.undo = undo
        self.planner = planner
        self._planning = False

    def compose(self) -> ComposeResult:
        with Vertical() as frame:
            frame.border_title = "Rewind"
            yield Static(
                Text(
                    "Go back to just before a prompt: Enter shows what will change and asks "
                    "what to take back, before anything is touched. Nothing leaves the log: "
                    "a rewind can itself be undone."
                ),
                id="title",
            )
            yield RewindTable(id="points", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(RewindTable)
        table.add_columns(Text("turn", justify="right"), "sent", "prompt", "files changed")
        if self.undo is not None:
            table.add_row(
                Text("↶", justify="right", style="bold cyan"),
                "",
                Text(f"Undo the last rewind (to turn {self.undo.to_turn})", style="bold"),
                "",
                key=UNDO_KEY,
            )
        for point in self.points:
            table.add_row(
                Text(str(point.turn), justify="right"),
                Text(sent_at(point.time)),
                Text(first_line(point.prompt, PROMPT_CHARS) or "(no prompt)"),
                Text(files_summary(point.files)) if point.files else Text("none", style="dim"),
                key=str(point.turn),
            )
        table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is None or self._planning:
            return
        self._choose(None if key == UNDO_KEY else int(key))

    @work(group="rewind-plan", exclusive=True)
    async def _choose(self, to_turn: int | None) -> None:
        """Ask the Agent what the rewind would do, then the user what to take back."""
        self._planning = True
        try:
            point, plan = await self.planner(to_turn)
        except TrellisError as exc:
            self.notify(str(exc), severity="error", title="Rewind", markup=False)
            return
        finally:
            self._planning = False
        turn = next((p for p in self.points if p.turn == point.to_turn), None)

        def chosen(request: RewindRequest | None) -> None:
            if request is not None:
                self.dismiss(request)

        await self.app.push_screen(
            RewindDialog(point, plan, turn=turn, undo=to_turn is None), callback=chosen
        )

    def action_close(self) -> None:
        self.dismiss(None)


class RewindDialog(ModalScreen[RewindRequest | None]):
    """What a rewind to one prompt would do, then the choice: Enter takes the highlighted one,
    `o` says to overwrite the files changed by someone else (kept by default), Esc cancels."""

    DEFAULT_CSS = """
    RewindDialog { align: center middle; }
    RewindDialog > Vertical {
        width: 90; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; border-title-style: bold; background: $surface; padding: 0 1;
    }
    RewindDialog #plan { height: auto; max-height: 20; }
    RewindDialog #plan Static { height: auto; }
    RewindDialog #overwrite, RewindDialog #overwrite:focus { margin: 1 0 0 0; border: none; }
    RewindDialog OptionList, RewindDialog OptionList:focus {
        height: auto; border: none; padding: 0; margin-top: 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "toggle_overwrite", "Overwrite changed files"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(
        self,
        point: RewindPoint,
        plan: CodePlan | None,
        *,
        turn: RewoundTurn | None = None,
        undo: bool = False,
    ) -> None:
        super().__init__()
        self.point = point
        self.plan = plan
        self.turn = turn
        self.undo = undo

    @property
    def code_unavailable(self) -> str | None:
        """Why the code part cannot be chosen, or None when it can."""
        plan = self.plan
        if plan is None:
            return "the rewind being undone changed no file"
        if plan.refused is not None:
            return plan.refused
        if plan.plan is None:
            return "no change to the files is recorded since this prompt"
        return None

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = (
                f"Undo the rewind to turn {self.point.to_turn}"
                if self.undo
                else f"Rewind to before turn {self.point.to_turn}"
            )
            with VerticalScroll(id="plan"):
                yield Static(self._plan_text(), id="plan-text")
            plan = self.plan
            if plan is not None and plan.conflicts:
                count = len(plan.conflicts)
                yield Checkbox(
                    f"Overwrite the {count} file{'' if count == 1 else 's'} changed since (o)",
                    id="overwrite",
                )
            yield OptionList(*self._options(), id="choices")
        yield KeyFooter()

    def on_mount(self) -> None:
        choices = self.query_one(OptionList)
        choices.highlighted = next(
            (i for i, o in enumerate(choices.options) if not o.disabled), None
        )
        choices.focus()

    def _options(self) -> list[Option]:
        unavailable = self.code_unavailable
        options: list[Option] = []
        for choice in CHOICES:
            label = f"Undo: {choice.label.lower()}" if self.undo else choice.label
            disabled = choice.code and unavailable is not None
            if disabled:
                options.append(
                    Option(Text.assemble(label, (f"  — {unavailable}", "dim")), choice.id, True)
                )
            else:
                options.append(Option(Text(label), choice.id))
        options.append(Option(Text("Cancel"), CANCEL))
        return options

    def _plan_text(self, overwrite: bool = False) -> Text:
        """Said before the user confirms: the prompt, what the conversation part does, the files
        that will change, those changed by someone else, and what cannot be restored."""
        lines: list[Text] = []
        if self.undo:
            lines.append(Text("Brings back what that rewind took back, as it was just before it."))
        else:
            prompt = self.turn.prompt if self.turn is not None else self.point.prompt
            lines.append(Text.assemble(("Prompt: ", "bold"), first_line(prompt, 200) or "-"))
            lines.append(
                Text(
                    "Conversation: the turns from this one on leave the history (the transcript "
                    "keeps them); the prompt comes back in the input to edit.",
                    style="dim",
                )
            )
        unavailable = self.code_unavailable
        plan = self.plan
        if unavailable is not None or plan is None:
            lines.append(Text.assemble(("Code: ", "bold"), (f"{unavailable}.", "dim")))
            return Text("\n").join(lines)
        conflicts = set(plan.conflicts)
        writes = [p for p in plan.writes if p not in conflicts]
        deletes = [p for p in plan.deletes if p not in conflicts]
        lines += _paths("Writes back", writes, "↺", "yellow")
        lines += _paths("Removes", deletes, "✗", "red")
        if plan.conflicts:
            fate = "overwritten" if overwrite else "kept as they are unless overwritten"
            heading = f"Changed since by someone else, {fate}"
            lines += _paths(heading, plan.conflicts, "!", "bold yellow")
        elif not (writes or deletes):
            lines.append(Text.assemble(("Files: ", "bold"), ("already as they were.", "dim")))
        if plan.unrestorable:
            lines.append(Text("Cannot be restored:", style="bold"))
            lines += [Text(f"· {sentence}", style="dim") for sentence in plan.unrestorable]
        return Text("\n").join(lines)

    @property
    def overwrite(self) -> bool:
        boxes = self.query("#overwrite").results(Checkbox)
        return any(box.value for box in boxes)

    @on(Checkbox.Changed)
    def _overwrite_changed(self, event: Checkbox.Changed) -> None:
        self.query_one("#plan-text", Static).update(self._plan_text(event.value))

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        choice = next((c for c in CHOICES if c.id == event.option.id), None)
        if choice is None:
            self.dismiss(None)
            return
        self.dismiss(
            RewindRequest(
                None if self.undo else self.point.to_turn,
                conversation=choice.conversation,
                code=choice.code,
                overwrite=choice.code and self.overwrite,
            )
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`o` only where there are files changed by someone else to overwrite."""
        if action == "toggle_overwrite":
            return self.plan is not None and bool(self.plan.conflicts)
        return True

    def action_toggle_overwrite(self) -> None:
        for box in self.query("#overwrite").results(Checkbox):
            box.toggle()

    def action_cancel(self) -> None:
        self.dismiss(None)


def _paths(heading: str, paths: Sequence[str], mark: str, style: str) -> list[Text]:
    """`heading (2):` and a path a line, each after its mark (a wrapped text drops a line's
    leading spaces, so marks, not indents, set the paths apart); nothing for no path."""
    if not paths:
        return []
    return [
        Text(f"{heading} ({len(paths)}):", style="bold"),
        *(Text.assemble((f"{mark} ", style), path) for path in paths),
    ]


def rewind_notice(result: RewindResult) -> tuple[str, bool]:
    """What a rewind restored and what it did not, for a notice; whether it needs attention
    (files kept, failed or refused)."""
    code = result.code
    words = rewind_words(
        result.to_turn,
        conversation=result.conversation,
        code=code is not None,
        undo=result.undid is not None,
    )
    lines = [f"{words}."]
    if code is not None:
        done = [f"{len(code.written)} restored"]
        if code.deleted:
            done.append(f"{len(code.deleted)} removed")
        lines.append(f"Files: {', '.join(done)}.")
        if code.kept:
            lines.append(f"Kept, changed by someone else: {', '.join(code.kept)}.")
        if code.failed:
            failed = "; ".join(f"{n.path}: {n.reason}" for n in code.failed)
            lines.append(f"Not written: {failed}.")
    if result.code_refused is not None:
        lines.append(f"Files not rewound: {result.code_refused}.")
    if result.conversation:
        lines.append(f"Model {result.model}, mode {result.mode}.")
        if result.prompt and result.undid is None:
            lines.append("The prompt is back in the input.")
    if result.cleared:
        lines.append(f"Dropped what waited to be sent: {len(result.cleared)}.")
    if result.unrestored_areas:
        lines.append(f"Areas not restored: {'; '.join(result.unrestored_areas)}.")
    lines.append(f"Not restored: {'; '.join(result.not_restored)}.")
    attention = bool(result.code_refused or (code is not None and (code.kept or code.failed)))
    return "\n".join(lines), attention
