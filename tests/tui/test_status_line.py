"""The status line (issue 28, item 11): tokens against the model's window, every figure labelled,
fields that never run together, and one fixed order in which they drop at narrow widths."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from rich.text import Text
from textual.pilot import Pilot

from app.tui.screens.inspector import ContextInspector
from app.tui.widgets.entries import TurnRule, turn_rule
from app.tui.widgets.status_line import (
    Need,
    StatusField,
    StatusLine,
    status_fields,
    status_layout,
)
from engine.agent import open_agent
from engine.commands import REGISTRY
from engine.config import Config, ModelEntry, ModelPrice
from engine.context.usage import ContextUsage
from engine.events import Event, Usage
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.permission_mode import MODE_NAMES, PermissionMode
from engine.store.sqlite.store import SQLiteStore
from replay.acp import AcpProjection
from replay.entries import TurnEntry
from tests.terminal import Terminal
from tests.tui.conftest import ConsoleTestApp
from tests.tui.test_console import send, settle
from tests.tui.test_literal_text import drawn
from tests.tui.test_long_session import opened
from tests.tui.test_sessions import until_screen

USAGE = ContextUsage(
    prompt_tokens=1_234, output_tokens=51, estimated=False, window=200_000, cap_tokens=195_904
)
FIELDS = status_fields(
    status="running",
    model="claude-sonnet",
    egress="internal",
    usage=USAGE,
    session_tokens=19_400,
    session_estimated=False,
    note="",
)


def shown(width: int) -> str:
    return status_layout(FIELDS, width).plain


def test_every_figure_is_labelled_at_full_width() -> None:
    assert shown(200) == (
        "● running │ claude-sonnet │ egress internal │ ctx 1.3k/200k tok ░░░░░░░░░░░░ │ "
        "cap 195k │ in 1.2k out 51 │ session 19k tok"
    )


CACHED = ContextUsage(
    prompt_tokens=12_000,
    output_tokens=230,
    cache_read_tokens=9_800,
    cache_write_tokens=1_000,
    estimated=False,
    window=200_000,
    cap_tokens=195_904,
)


def test_the_step_shows_its_cache_parts_and_the_session_its_cost() -> None:
    fields = status_fields(
        status="idle",
        model="claude",
        egress="",
        usage=CACHED,
        session_tokens=40_000,
        session_estimated=False,
        note="",
        session_cost={"USD": 0.0421},
    )
    assert status_layout(fields, 200).plain == (
        "● idle │ claude │ ctx 12k/200k tok █░░░░░░░░░░░ │ cap 195k │ "
        "in 1.2k read 9.8k write 1.0k out 230 │ session 40k tok │ cost 0.0421 USD"
    )
    # the cost gives way after the step's parts, before the session's tokens
    assert status_layout(fields, 90).plain == (
        "● idle │ claude │ ctx 12k/200k tok │ session 40k tok │ cost 0.0421 USD"
    )
    two = status_fields(
        status="idle",
        model="m",
        egress="",
        usage=None,
        session_tokens=0,
        session_estimated=False,
        note="",
        session_cost={"USD": 1.5, "EUR": 0.25},
    )
    assert status_layout(two, 80).plain == "● idle │ m │ cost 0.2500 EUR + 1.50 USD"


@pytest.mark.parametrize(
    ("width", "line"),
    [
        (80, "● running │ claude-sonnet │ ctx 1.3k/200k tok │ in 1.2k out 51 │ session 19k tok"),
        (60, "● running │ claude-sonnet │ ctx 1.3k/200k tok"),
        (40, "● running │ claude-sonnet"),
        (20, "● running"),
    ],
)
def test_narrow_widths_drop_the_least_needed_fields_first(width: int, line: str) -> None:
    assert shown(width) == line


def test_the_fields_drop_in_one_fixed_order_and_never_run_together() -> None:
    """At every width the line is the fields less the k least needed, for a k that only grows as
    the width shrinks, each field whole and apart from its neighbours."""
    by_need = sorted(FIELDS, key=lambda f: f.need)
    dropped_before = 0
    for width in range(200, 24, -1):
        line = shown(width)
        assert len(line) <= width
        dropped = next(
            k
            for k in range(len(FIELDS))
            if line == status_layout([f for f in FIELDS if f not in by_need[:k]], 10_000).plain
        )
        assert dropped >= dropped_before
        dropped_before = dropped
    assert dropped_before == len(FIELDS) - 2  # the status and the model stay longest


def test_a_new_field_slots_in_by_its_need() -> None:
    """A later field (a mode, a cost) is placed where it is shown and drops by its need alone."""
    mode = StatusField(Text("mode plan"), Need.model)
    fields = [*FIELDS[:2], mode, *FIELDS[2:]]
    assert status_layout(fields, 40).plain == "● running │ claude-sonnet │ mode plan"
    assert "mode plan │ ctx" in status_layout(fields, 60).plain


def test_an_estimate_is_marked_and_an_unknown_window_is_the_cap() -> None:
    estimated = ContextUsage(
        prompt_tokens=400, output_tokens=17, estimated=True, window=None, cap_tokens=32_000
    )
    fields = status_fields(
        status="idle",
        model="scripted",
        egress="",
        usage=estimated,
        session_tokens=900,
        session_estimated=True,
        note="",
    )
    line = status_layout(fields, 200).plain
    assert "ctx ~417/~32k tok" in line
    assert "in ~400 out ~17" in line
    assert "session ~900 tok" in line
    assert "cap" not in line  # the cap is the size shown


async def status_text(app: ConsoleTestApp) -> str:
    return app.main.query_one(StatusLine).render().plain


async def test_the_console_shows_tokens_against_the_entrys_window_as_acp_does(
    workspace: Path, data: Path
) -> None:
    config = Config(
        default_model="wide",
        models={"wide": ModelEntry(provider="scripted", context_window=200_000)},
    )
    app = ConsoleTestApp(workspace, data, [Reply(text="hello there")], config=config)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app, pilot)
        assert "ctx 0/200k tok" in await status_text(app)
        await send(app, pilot, "hi")
        await settle(app, pilot)
        usage = app.main.query_one(StatusLine).usage
        events: list[Event] = list(await app.live.read_log())
        text = await status_text(app)
    assert usage is not None
    (acp,) = [
        u
        for u in AcpProjection(str(workspace)).replay(events)
        if u["sessionUpdate"] == "usage_update"
    ]
    assert (acp["used"], acp["size"]) == (usage.used, usage.size) == (usage.used, 200_000)
    assert f"ctx {usage.used}/200k tok" in text
    assert "cap 195k" in text


@pytest.mark.parametrize("width", [80, 60, 40])
async def test_the_console_status_line_fits_each_width(
    workspace: Path, data: Path, width: int
) -> None:
    app = ConsoleTestApp(workspace, data, [Reply(text="hello there")])
    async with app.run_test(size=(width, 24)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "hi")
        await settle(app, pilot)
        text = await status_text(app)
    assert len(text) <= width - 2  # the line's padding
    assert text.startswith("● idle │ scripted │ ctx ")
    assert "…" not in text
    for word in ("idlectx", "idle ctx", "tokin", "toksession"):
        assert word not in text


def test_the_console_shows_the_configured_cap_and_context_reports_it(tmp_path: Path) -> None:
    """In the real `trellis` at 80 x 24: a cap the user set below the window's is the one the
    status line names, and `/context` says where it comes from."""
    config = tmp_path / "config.toml"
    config.write_text(
        'default_model = "wide"\n'
        "[models.wide]\n"
        'provider = "scripted"\n'
        "context_window = 200000\n"
        "[context]\n"
        "char_cap = 60000\n",
        encoding="utf-8",
    )
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with Terminal(
        [], home=tmp_path / "home", cwd=workspace, config=config, rows=24, columns=80
    ) as terminal:
        screen = terminal.wait_for("ctx 0/200k tok")
        assert "cap 20k" in screen
        terminal.write("/context")
        terminal.press("enter")
        screen = terminal.wait_for("char_cap")
        terminal.press("ctrl+q")
    assert "60,000 chars" in screen
    assert "window 200,000 tokens" in screen


async def test_a_resumed_session_shows_its_last_request_against_the_entry_bound_now(
    workspace: Path, data: Path
) -> None:
    """The last request was made on `wide`; `/model narrow` came after it: the resumed console
    measures it against `narrow`'s window, as the live one did after the switch."""
    config = Config(
        default_model="wide",
        models={
            "wide": ModelEntry(provider="scripted", context_window=200_000),
            "narrow": ModelEntry(provider="scripted", context_window=8_192),
        },
    )
    async with SQLiteStore(data / "sessions.sqlite") as store:
        agent = await open_agent(
            config=config,
            cwd=workspace,
            store=store,
            gateway=ScriptedGateway([Reply(text="hello")]),
        )
        try:
            agent.send("hi")
            await agent.when_idle()
            assert (await REGISTRY.run(agent, "/model narrow")).ok
            session_id = agent.session_id
        finally:
            await agent.aclose()
    app = ConsoleTestApp(workspace, data, [], config=config, session_id=session_id)
    async with app.run_test(size=(120, 30)) as pilot:
        await opened(app, pilot)
        text = await status_text(app)
    assert "│ narrow │" in text
    assert "/8.2k tok" in text


@pytest.mark.parametrize(
    ("mode", "line"),
    [
        ("ask", "● running │ claude-sonnet │ ctx 1.3k/200k tok"),
        ("read-only", "● running │ mode read-only │ claude-sonnet"),
        ("approve-all", "● running │ mode approve all │ claude-sonnet"),
    ],
)
def test_a_mode_other_than_ask_stays_when_the_line_is_narrow(
    mode: PermissionMode, line: str
) -> None:
    fields = status_fields(
        status="running",
        model="claude-sonnet",
        egress="internal",
        usage=USAGE,
        session_tokens=19_400,
        session_estimated=False,
        note="",
        mode=mode,
    )
    assert status_layout(fields, 200).plain.startswith(f"● running │ mode {MODE_NAMES[mode]} │ ")
    assert status_layout(fields, 60).plain == line


async def test_a_priced_cached_step_shows_its_parts_and_cost_everywhere(
    workspace: Path, data: Path
) -> None:
    """The status line, the turn rule, the inspector and ACP's usage_update say the same parts
    and cost for a step a caching provider answered."""
    price = ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    config = Config(
        default_model="claude",
        models={"claude": ModelEntry(provider="scripted", context_window=200_000, price=price)},
    )
    usage = Usage(
        input_tokens=200, cache_read_tokens=9_800, cache_write_tokens=512, output_tokens=51
    )
    app = ConsoleTestApp(workspace, data, [Reply(text="hello there", usage=usage)], config=config)
    async with app.run_test(size=(160, 30)) as pilot:
        await opened(app, pilot)
        await send(app, pilot, "hi")
        await settle(app, pilot)
        text = await status_text(app)
        turn = app.main.query_one(TurnRule).entry
        assert isinstance(turn, TurnEntry)
        rule = turn_rule(turn).plain
        events: list[Event] = list(await app.live.read_log())
        await pilot.press("f3")
        await until_screen(pilot, ContextInspector)
        header = drawn(app.screen.query_one("#header"))
    # 200 x 3 + 9,800 x 0.3 + 512 x 3.75 + 51 x 15 = 600 + 2,940 + 1,920 + 765 = 6,225 per million
    assert "in 200 read 9.8k write 512 out 51" in text
    assert "cost 0.0062 USD" in text
    assert rule.endswith(" s · 0.0062 USD · in 200 read 9.8k write 512 out 51 tok ──")
    assert "step in 200 · cache read 9.8k · cache write 512 · out 51 tok · cost 0.0062 USD" in (
        " ".join(header.split())
    )
    (update,) = [
        u
        for u in AcpProjection(str(workspace)).replay(events)
        if u["sessionUpdate"] == "usage_update"
    ]
    parts = update["_meta"]["trellis/usage"]
    assert (parts["input_tokens"], parts["cache_read_tokens"]) == (200, 9_800)
    assert (parts["cache_write_tokens"], parts["output_tokens"]) == (512, 51)
    assert update["cost"] == {"amount": pytest.approx(0.006225), "currency": "USD"}
    assert update["used"] == 10_512 + 51


def test_a_narrow_turn_rule_cuts_its_tokens_and_keeps_its_cost() -> None:
    turn = TurnEntry(
        key="turn:3",
        seq=40,
        number=3,
        status="ended",
        reason="completed",
        steps=2,
        usage=Usage(input_tokens=1_200, cache_read_tokens=9_800, output_tokens=230),
        cost={"USD": 0.0042},
        start=100.0,
        end=103.4,
    )
    assert turn_rule(turn).plain == (
        "── turn 3 · completed · 2 steps · 3.4 s · 0.0042 USD · in 1.2k read 9.8k out 230 tok ──"
    )
    narrow = turn_rule(turn, width=60).plain
    assert narrow.startswith("turn 3 · completed · 2 steps · 3.4 s · 0.0042 USD · in 1.2k")
    unpriced = TurnEntry(key="turn:1", seq=0, number=1, status="running", steps=0, start=0.0)
    assert turn_rule(unpriced).plain == "── turn 1 · running · 0 steps ──"


PRICE = ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
CACHED_STEP = Usage(
    input_tokens=200, cache_read_tokens=9_800, cache_write_tokens=512, output_tokens=51
)


def every_field(workspace: Path, data: Path) -> ConsoleTestApp:
    """A console whose status line has every field the issues before 32 added: a mode other than
    ask (set with F5), a priced step with cache parts, the session's tokens and cost."""
    config = Config(
        default_model="claude",
        models={"claude": ModelEntry(provider="scripted", context_window=200_000, price=PRICE)},
    )
    return ConsoleTestApp(
        workspace, data, [Reply(text="hello there", usage=CACHED_STEP)], config=config
    )


async def every_field_shown(app: ConsoleTestApp, pilot: Pilot[None]) -> None:
    await opened(app, pilot)
    await pilot.press("f5")
    await send(app, pilot, "hi")
    await settle(app, pilot)


@pytest.mark.parametrize(
    ("width", "line"),
    [
        (
            160,
            "● idle │ mode accept edits │ claude │ egress restricted │ ctx 10k/200k tok │ "
            "cap 195k │ in 200 read 9.8k write 512 out 51 │ session 10k tok │ cost 0.0062 USD",
        ),
        (
            100,
            "● idle │ mode accept edits │ claude │ ctx 10k/200k tok │ session 10k tok │ "
            "cost 0.0062 USD",
        ),
        (80, "● idle │ mode accept edits │ claude │ ctx 10k/200k tok │ session 10k tok"),
        (60, "● idle │ mode accept edits │ claude │ ctx 10k/200k tok"),
        (40, "● idle │ mode accept edits │ claude"),
        (30, "● idle │ mode accept edits"),
    ],
)
async def test_the_console_drops_the_fields_in_the_documented_order(
    workspace: Path, data: Path, width: int, line: str
) -> None:
    """The order in status_line.py's docstring and the README, on the running console: the
    meter, cap, egress and step's tokens go first, then the cost, the session's tokens, the
    context, the model; a mode other than ask stays beside the status."""
    app = every_field(workspace, data)
    async with app.run_test(size=(width, 30)) as pilot:
        await every_field_shown(app, pilot)
        assert await status_text(app) == line


def test_the_status_line_at_80_columns(
    snap_compare: Callable[..., bool], workspace: Path, data: Path
) -> None:
    app = every_field(workspace, data)

    async def run(pilot: Pilot[None]) -> None:
        await every_field_shown(app, pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run)
