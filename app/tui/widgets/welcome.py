"""The welcome of a new session: which model runs, what the offline model can show and how to get a
real one, the models found on this machine, and the keys that matter.

It is no transcript entry: the main screen shows it above the conversation until the first prompt
and then removes it, so it never enters the log, the projection, an export or a replay.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.columns import Columns
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from engine.model_catalog import ModelChoice

FOUND_SHOWN = 4
"""Found models named at most; the rest are counted (`/model` lists them all)."""
KEYS = (
    ("F1", "help"),
    ("F2", "side panel"),
    ("F3", "inspector"),
    ("F4", "sessions"),
    ("/", "commands"),
    ("@", "attach a file"),
)


class Welcome(Static):
    """Shown on a new session until its first prompt; `found` grows as local servers answer, and
    `running` is set once the session opens on a model that had to be found first."""

    DEFAULT_CSS = """
    Welcome {
        height: auto;
        margin: 1 1 0 1;
        padding: 0 1;
        border: round $primary;
        border-title-color: $text;
        border-title-style: bold;
    }
    """

    found: reactive[tuple[ModelChoice, ...]] = reactive((), layout=True)
    running: reactive[ModelChoice | None] = reactive(None, layout=True)
    """The model as the opened session runs it; None until a local server's model is found."""

    def __init__(
        self, model: str, running: ModelChoice | None, found: Sequence[ModelChoice] = ()
    ) -> None:
        super().__init__()
        self.model = model
        self.set_reactive(Welcome.running, running)
        self.set_reactive(Welcome.found, tuple(found))
        self.border_title = "Welcome to Trellis"

    def render(self) -> Table:
        return welcome_table(self.model, self.running, self.found)


def welcome_table(model: str, running: ModelChoice | None, found: Sequence[ModelChoice]) -> Table:
    """A row per subject: the model, what to try (offline) or how to switch, a real model, what
    was found, the keys. Names are shown as they are (no markup is read from data)."""
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(ratio=1)
    table.add_row("Model", _model(model, running))
    offline = running is not None and running.offline
    if offline:
        table.add_row(
            "Try",
            Text.assemble(
                ('"list the files here"', "italic"),
                " or ",
                ('"read README.md"', "italic"),
                " (tool calls), /inject TEXT (injected context), /plan add TEXT or /watch PATH "
                "(context areas, F2)",
            ),
        )
        table.add_row(
            "Real model",
            "set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY, or run Ollama or "
            "LM Studio here; then pick it with /model",
        )
    others = [choice for choice in found if choice.name != model]
    if others:
        names = Text(", ").join(Text(choice.name, style="bold") for choice in others[:FOUND_SHOWN])
        more = len(others) - FOUND_SHOWN
        table.add_row(
            "Found",
            Text.assemble(
                names,
                f" and {more} more" if more > 0 else "",
                " · /model picks one",
                "; nothing is sent anywhere until you do" if offline else "",
            ),
        )
    elif not offline:
        table.add_row("Switch", "/model lists every model and switches")
    # a key and what it does stay together: the pairs are laid out whole, in columns
    table.add_row(
        "Keys",
        Columns(
            [Text.assemble((f" {key} ", "bold reverse"), f" {what}") for key, what in KEYS],
            padding=(0, 2),
        ),
    )
    return table


def _model(model: str, running: ModelChoice | None) -> Text:
    name = Text(model, style="bold")
    if running is None:
        return Text.assemble(name, ", a local server's: it is asked as the session opens")
    if running.offline:
        return Text.assemble(name, ", the offline demo model: deterministic, no network")
    return Text.assemble(
        name,
        f" · {running.provider} {running.model} · from {running.origin}",
        f" · egress up to {running.egress.name}",
    )
