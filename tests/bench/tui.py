"""Benchmark: the console on long sessions, headless (Pilot); prints JSON.

Run `python -m tests.bench.tui`. Targets (issue 12):
- first paint (the session's last turn on screen) when resuming sessions of 100, 1,000 and 10,000
  turns: 10,000 within 2x of 100, and under 1.5 s; input enabled (the Agent ready) is measured apart;
  and on 100 turns whose last reply is 100 KB of Markdown: within 2x of 100 turns (not an issue
  target: the reply's parts compose as the view comes near them);
- first paint of a new session (the prompt on screen) and input enabled, with `--before DIR`
  beside the same on an earlier tree, interleaved (issue 28: the welcome and the model discovery
  must not slow it);
- streaming at 5,000 characters a second for 20 s: all text shown, in order, no backlog at the end;
- a key press echoed in the input while a reply streams: p95 under 50 ms;
- resident growth from first paint to having scrolled from the end to the start of a 10,000-turn
  session: under 100 MB. The sample pages up from the end (`PAGES` pages, each read from the store
  and the far ones dropped), goes Home to turn 1, pages down from there and goes End to the live
  tail: the time of each page, of Home and of End, the entries held at most and the memory.

First paint compares two variants in interleaved rounds: `whole-log` (the console before issue 12: open the Agent on the
whole log, then project every event from seq 0 into the transcript) and `tail` (now: the last turns
from a range read are on screen before the Agent opens; older turns load from the store as the user
scrolls up). Every sample runs in a child process of its own (`--sample`), so its resident memory
(VmRSS) and its caches are its own; figures are medians over the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from textual import events
from textual.screen import Screen
from textual.scrollbar import ScrollTo

from app.tui.app import TrellisApp
from app.tui.screens.main import MainScreen
from app.tui.widgets import entries
from app.tui.widgets.entries import AssistantMessage
from app.tui.widgets.prompt_input import PromptInput
from app.tui.widgets.transcript_view import TranscriptView
from engine.config import Config
from engine.events import AssistantMessage as AssistantMessageEvent
from engine.events import TurnStart
from engine.gateway.base import ModelRequest, StreamDelta, TextDelta
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.store.sqlite.store import SQLiteStore
from replay.transcript import AssistantEntry, transcript_of
from tests.bench.store import make_events

SIZES = (100, 1_000, 10_000)
TURN_EVENTS = 13  # make_events writes turns of a prompt and two tool steps
ROUNDS = 3
MEMORY_ROUNDS = 1
VARIANTS = ("whole-log", "tail")
STREAM_VARIANTS = ("one-markdown", "tail")
"""`one-markdown`: the reply streamed into one Markdown widget, as before its finished blocks were
sealed apart (`SEAL_BLOCKS` beyond reach)."""
WHOLE_LOG_SIZES = (100, 1_000)
"""The console before does not paint 10,000 turns within minutes (it projects and bridges every
event before the tail shows, and its window never trims while scrolling up), so it runs at the two
smaller sizes, and its scroll sample is skipped."""
LONG_REPLY = 100_000
"""First paint is also measured on 100 turns whose last reply is this many characters of
Markdown (a finished reply composes a part at a time; whole, it was thousands of widgets)."""
LONG_REPLY_KEY = f"{SIZES[0]}+reply{LONG_REPLY // 1000}k"
RATE = 5_000  # characters a second
STREAM_S = 20.0
KEY_EVERY_S = 0.2
SCROLL_BUDGET_S = 60.0
"""Home or End not done by then is reported as not reached."""
PAGES = 60
"""Pages of scrollback loaded each way (up from the end, down from turn 1): 3,000 entries, some
500 turns, read from the store and dropped again as the window moves."""
SIZE = (120, 40)
KEY_BUDGET_S = 30.0
"""A key not echoed by then counts as echoed then."""
SAMPLE_BUDGET_S = 900.0
"""A child process still running by then is stopped and its sample reported as failed."""
PAINT_BUDGET_S = 120.0
"""A first paint slower than this is reported as not reached (`paint_s` is the budget then)."""


class PacedGateway(ScriptedGateway):
    """The scripted model, its text sent at `rate` characters a second on a fixed schedule (so a
    slow consumer does not slow the sender); `sent` counts what it sent, `done` when it ended."""

    def __init__(self, replies: list[Reply], rate: int) -> None:
        super().__init__(replies, record_requests=False)
        self.rate = rate
        self.sent = 0
        self.began: float | None = None
        self.done: float | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta]:
        start = self.began = time.perf_counter()
        async for delta in super().stream(request):
            if isinstance(delta, TextDelta):
                due = start + (self.sent + len(delta.text)) / self.rate
                await asyncio.sleep(max(due - time.perf_counter(), 0))
                self.sent += len(delta.text)
            yield delta
        self.done = time.perf_counter()


class BenchApp(TrellisApp):
    """The console with the paced model and no cursor blink."""

    CURSOR_BLINK = False

    def __init__(self, store_path: Path, session_id: str | None, gateway: ScriptedGateway) -> None:
        super().__init__(
            config=Config(),
            cwd=Path(tempfile.gettempdir()),
            store_path=store_path,
            session_id=session_id,
            gateway=gateway,
        )


class WholeLogApp(BenchApp):
    """The console as it opened a session before issue 12: the Agent first (the whole log
    loaded), then every event from seq 0 projected into the transcript."""

    async def _open_session(self, session_id: str | None) -> None:
        self.agent = await self._agent_for(session_id)
        screen = MainScreen()
        await self.push_screen(screen)
        await screen.attach(self.agent, from_seq=0)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def make_app(variant: str, db: Path, session_id: str, gateway: ScriptedGateway) -> BenchApp:
    kind = WholeLogApp if variant == "whole-log" else BenchApp
    return kind(db, session_id, gateway)


async def last_key(db: Path, session_id: str) -> str:
    async with SQLiteStore(db) as store:
        return transcript_of(await store.read_last_turns(session_id, 1)).entries[-1].key


def main_screen(app: TrellisApp) -> MainScreen | None:
    screen = app.screen_stack[-1] if len(app.screen_stack) > 1 else None
    return screen if isinstance(screen, MainScreen) and screen.is_mounted else None


def view_of(app: TrellisApp) -> TranscriptView | None:
    screen = main_screen(app)
    if screen is None:
        return None
    return next(iter(screen.query(TranscriptView)), None)


def painted(app: TrellisApp, key: str) -> bool:
    """The session's last entry is laid out in the viewport of the conversation."""
    view = view_of(app)
    if view is None:
        return False
    widget = next((w for w in reversed(view.entry_widgets()) if w.key == key), None)
    if widget is None or not widget.region.height:
        return False
    return bool(view.region.overlaps(widget.region))


def ready(app: TrellisApp) -> bool:
    screen = main_screen(app)
    prompt = next(iter(screen.query(PromptInput)), None) if screen is not None else None
    return app.agent is not None and prompt is not None and not prompt.disabled


async def until(
    check: Callable[[], bool], start: float, *, step: float = 0.002, budget: float | None = None
) -> float:
    """Seconds from `start` until `check` holds, polling on the app's loop (at most `budget`)."""
    while not check():
        if budget is not None and time.perf_counter() - start > budget:
            break
        await asyncio.sleep(step)
    return time.perf_counter() - start


@asynccontextmanager
async def running(app: BenchApp) -> AsyncIterator[None]:
    """`app` running headless at `SIZE`, without Pilot: `run_test` waits at most 30 s for the
    screen to drain its messages (at start and on every pause), which a loaded machine overran;
    the samples wait with `until`, on conditions of their own, with budgets of their own."""
    task = asyncio.create_task(app.run_async(headless=True, size=SIZE))
    await until(lambda: app.is_running or task.done(), time.perf_counter(), step=0.01)
    try:
        yield
    finally:
        app.exit()
        await task


async def settled(app: BenchApp) -> None:
    """The app's workers are done and a frame has been drawn since."""
    await app.workers.wait_for_complete()
    drawn = asyncio.Event()
    app.call_after_refresh(drawn.set)
    await drawn.wait()


async def first_paint(variant: str, db: Path, session_id: str) -> dict[str, Any]:
    key = await last_key(db, session_id)
    app = make_app(variant, db, session_id, ScriptedGateway([]))
    start = time.perf_counter()
    watch: dict[str, float] = {}

    async def observe() -> None:
        watch["paint_s"] = await until(lambda: painted(app, key), start, budget=PAINT_BUDGET_S)
        watch["ready_s"] = await until(lambda: ready(app), start, budget=PAINT_BUDGET_S)

    task = asyncio.create_task(observe())
    async with running(app):
        await task
        reached = painted(app, key)
    return {**watch, "painted": reached}


def prompt_shown(app: TrellisApp) -> bool:
    """The main screen's prompt is laid out on screen (a new session's first paint)."""
    screen = main_screen(app)
    prompt = next(iter(screen.query(PromptInput)), None) if screen is not None else None
    return prompt is not None and bool(prompt.region.height)


async def new_session(variant: str, db: Path, _: str) -> dict[str, Any]:
    """A new session in an empty store: the prompt on screen, then the prompt enabled."""
    app = BenchApp(db, None, ScriptedGateway([]))
    start = time.perf_counter()
    watch: dict[str, float] = {}

    async def observe() -> None:
        watch["paint_s"] = await until(lambda: prompt_shown(app), start, budget=PAINT_BUDGET_S)
        watch["ready_s"] = await until(lambda: ready(app), start, budget=PAINT_BUDGET_S)

    task = asyncio.create_task(observe())
    async with running(app):
        await task
        reached = prompt_shown(app) and ready(app)
    return {**watch, "painted": reached}


def page_up(view: TranscriptView) -> None:
    """What the scrollbar dragged to the top does (or, already there, the wheel turned up)."""
    if view.scroll_y > 0:
        view.post_message(ScrollTo(y=0, animate=False))
    else:
        view.on_mouse_scroll_up()


def page_down(view: TranscriptView) -> None:
    if view.scroll_y < view.max_scroll_y:
        view.post_message(ScrollTo(y=view.max_scroll_y, animate=False))
    else:
        view.on_mouse_scroll_down()


async def paging(
    app: BenchApp, view: TranscriptView, step: Callable[[TranscriptView], None]
) -> dict[str, Any]:
    """`PAGES` steps of `step`, each awaited until settled: the seconds each took, the most
    entries held and the peak resident memory meanwhile."""
    times: list[float] = []
    held = view.held.count
    peak = rss_mb()
    for _ in range(PAGES):
        began = time.perf_counter()
        step(view)
        await settled(app)
        times.append(time.perf_counter() - began)
        held = max(held, view.held.count)
        peak = max(peak, rss_mb())
    times.sort()
    return {
        "page_median_s": round(statistics.median(times), 4),
        "page_p95_s": round(times[int(len(times) * 0.95) - 1], 4),
        "held_max": held,
        "peak_mb": round(peak, 1),
    }


async def scroll_to_start(variant: str, db: Path, session_id: str) -> dict[str, Any]:
    """From the end: `PAGES` pages up, Home to turn 1, `PAGES` pages down from there, End."""
    key = await last_key(db, session_id)
    app = make_app(variant, db, session_id, ScriptedGateway([]))
    start = time.perf_counter()
    async with running(app):
        await until(lambda: painted(app, key), start, budget=PAINT_BUDGET_S)
        at_paint = rss_mb()
        await until(lambda: ready(app), start, budget=PAINT_BUDGET_S)
        await settled(app)
        at_ready = rss_mb()
        view = view_of(app)
        assert view is not None
        up = await paging(app, view, page_up)
        began = time.perf_counter()
        view.action_scroll_home()
        await until(lambda: turn_1_shown(view), began, budget=SCROLL_BUDGET_S)
        await settled(app)
        to_start = time.perf_counter() - began
        reached = turn_1_shown(view)
        at_start = rss_mb()
        down = await paging(app, view, page_down)
        began = time.perf_counter()
        view.action_scroll_end()
        await until(lambda: painted(app, key), began, budget=SCROLL_BUDGET_S)
        await settled(app)
        to_end = time.perf_counter() - began
        back = view.at_end and painted(app, key)
        peak = max(up["peak_mb"], down["peak_mb"], rss_mb())
        return {
            "rss_at_paint_mb": round(at_paint, 1),
            "rss_at_ready_mb": round(at_ready, 1),
            "rss_at_turn_1_mb": round(at_start, 1),
            "rss_peak_mb": round(peak, 1),
            "growth_from_paint_mb": round(at_start - at_paint, 1),
            "peak_growth_from_paint_mb": round(peak - at_paint, 1),
            "growth_from_ready_mb": round(at_start - at_ready, 1),
            "reached_start": reached,
            "home_to_turn_1_s": round(to_start, 3),
            "back_to_end": back,
            "end_to_live_tail_s": round(to_end, 3),
            "pages_each_way": PAGES,
            "page_up_median_s": up["page_median_s"],
            "page_up_p95_s": up["page_p95_s"],
            "page_down_median_s": down["page_median_s"],
            "page_down_p95_s": down["page_p95_s"],
            "entries_held_max": max(up["held_max"], down["held_max"]),
            "mounted_at_end": len(view.entry_widgets()),
        }


def turn_1_shown(view: TranscriptView) -> bool:
    widgets = view.entry_widgets()
    return bool(widgets) and widgets[0].key == "turn:1" and view.scroll_y == 0


def paragraphs(chars: int) -> str:
    """Markdown of about `chars` characters: paragraphs, a list now and then."""
    blocks: list[str] = []
    total = n = 0
    while total < chars:
        n += 1
        block = f"Paragraph {n}: the reply goes on with more words about the code. " * 5
        if n % 7 == 0:
            block = "\n".join(f"- item {n}.{i} of a list" for i in range(5))
        blocks.append(block.strip())
        total += len(block) + 2
    return "\n\n".join(blocks)


class KeyEcho:
    """When a key pressed shows in the input: `typed` when the input holds it (its cursor moves,
    a watch on the input's selection: no polling of the bench's own on the loop meanwhile), and
    `painted` when the next frame, which draws it, has been drawn."""

    def __init__(self, app: BenchApp, prompt: PromptInput) -> None:
        self.app = app
        self.pressed = 0.0
        self.typed: float | None = None
        self.painted = asyncio.Event()
        self.painted_at = 0.0
        app.watch(prompt, "selection", self._moved, init=False)

    def _moved(self) -> None:
        if self.typed is None and self.pressed:
            self.typed = time.perf_counter()
            self.app.call_after_refresh(self._drawn)

    def _drawn(self) -> None:
        self.painted_at = time.perf_counter()
        self.painted.set()

    async def press(self, key: str) -> tuple[float, float]:
        """Milliseconds from the key press until the input holds it, and until it is drawn
        (`KEY_BUDGET_S` for one that never shows)."""
        self.typed, self.painted_at = None, 0.0
        self.painted.clear()
        self.pressed = time.perf_counter()
        self.app.post_message(events.Key(key, key))
        try:
            await asyncio.wait_for(self.painted.wait(), KEY_BUDGET_S)
        except TimeoutError:
            return KEY_BUDGET_S * 1000, KEY_BUDGET_S * 1000
        assert self.typed is not None
        return (self.typed - self.pressed) * 1000, (self.painted_at - self.pressed) * 1000


async def streaming(variant: str, db: Path, session_id: str) -> dict[str, Any]:
    """One reply streamed at `RATE` for `STREAM_S`; a key pressed every `KEY_EVERY_S` meanwhile."""
    text = paragraphs(int(RATE * STREAM_S))
    gateway = PacedGateway([Reply(text=text)], RATE)
    if variant == "one-markdown":
        entries.SEAL_BLOCKS = sys.maxsize  # this child process only
    app = make_app("tail", db, session_id, gateway)
    start = time.perf_counter()
    async with running(app):
        await until(lambda: ready(app), start, step=0.01, budget=PAINT_BUDGET_S)
        await settled(app)
        assert app.agent is not None
        screen = app.screen_stack[-1]
        keys = KeyEcho(app, screen.query_one(PromptInput))
        app.agent.send("go")
        await until(lambda: streaming_reply(screen) is not None, start, budget=PAINT_BUDGET_S)
        reply = streaming_reply(screen)
        assert reply is not None

        def shown() -> str:
            return reply.shown_text

        lags: list[int] = []
        in_order = True
        echoes: list[float] = []
        paints: list[float] = []
        while gateway.done is None:
            typed, painted = await keys.press("x")
            echoes.append(typed)
            paints.append(painted)
            source = shown()
            in_order = in_order and text.startswith(source)
            lags.append(gateway.sent - len(source))
            await asyncio.sleep(KEY_EVERY_S)
        sent_done = gateway.done
        assert gateway.began is not None
        backlog = await until(lambda: shown() == text, sent_done, step=0.001, budget=STREAM_S)
        await app.agent.when_idle()
        final = reply.copy_text == text and shown() == text
    echoes.sort()
    paints.sort()
    took = sent_done - gateway.began
    return {
        "chars": len(text),
        "stream_s": round(took, 2),
        "chars_per_s": round(len(text) / took),
        "all_shown_in_order": final and in_order,
        "backlog_at_end_s": round(backlog, 4),
        "lag_chars_median": statistics.median(lags),
        "lag_chars_max": max(lags),
        "keys": len(echoes),
        "key_echo_p50_ms": round(statistics.median(echoes), 2),
        "key_echo_p95_ms": round(echoes[int(len(echoes) * 0.95) - 1], 2),
        "key_echo_max_ms": round(echoes[-1], 2),
        "key_painted_p50_ms": round(statistics.median(paints), 2),
        "key_painted_p95_ms": round(paints[int(len(paints) * 0.95) - 1], 2),
    }


def streaming_reply(screen: Screen[Any]) -> AssistantMessage | None:
    """The reply being streamed, once its Markdown is mounted."""
    for reply in screen.query(AssistantMessage):
        entry = reply.entry
        if isinstance(entry, AssistantEntry) and entry.streaming and reply.query("#reply"):
            return reply
    return None


SAMPLES = {
    "first_paint": first_paint,
    "new_session": new_session,
    "scroll": scroll_to_start,
    "streaming": streaming,
}


# --- the parent: build the sessions, run the samples in child processes, take medians ---------


async def build(db: Path, turns: int, *, last_reply: int = 0) -> str:
    """A stored session of `turns` turns; with `last_reply`, the last turn's reply is Markdown
    of that many characters."""
    events = make_events(turns * TURN_EVENTS)
    assert sum(isinstance(e.data, TurnStart) for e in events) == turns
    if last_reply:
        index = max(i for i, e in enumerate(events) if isinstance(e.data, AssistantMessageEvent))
        data = events[index].data.model_copy(update={"content": paragraphs(last_reply)})
        events[index] = events[index].model_copy(update={"data": data})
    async with SQLiteStore(db) as store:
        info = await store.create(cwd=tempfile.gettempdir())
        for i in range(0, len(events), 5_000):
            await store.append(info.id, events[i : i + 5_000])
        await store.flush(info.id)
        return info.id


def sample(
    kind: str, variant: str, db: Path, session_id: str, *, tree: Path | None = None
) -> dict[str, Any]:
    """One sample in a child process; a failed or overlong one is reported (`failed`), so one bad
    sample under load does not lose the others' figures. With `tree` the sample runs on the code
    of that tree (`before_tree`), measured by this benchmark."""
    argv = [sys.executable, "-m", "tests.bench.tui", "--sample", kind, variant, str(db), session_id]
    env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree)}
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=SAMPLE_BUDGET_S, env=env
        )
    except subprocess.TimeoutExpired:
        return {"failed": f"{kind} {variant}: no result within {SAMPLE_BUDGET_S:.0f} s"}
    if done.returncode != 0:
        return {"failed": f"{kind} {variant}: {done.stderr.strip().splitlines()[-1:]}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def before_tree(source: Path, into: Path) -> Path:
    """A tree whose `engine`, `replay` and `app` are those of `source` (an earlier tree, e.g. a
    `git archive` of main) and whose `tests` are these, so the code before is measured the same
    way as the code now."""
    into.mkdir()
    for package in ("engine", "replay", "app"):
        (into / package).symlink_to((source / package).resolve())
    (into / "tests").symlink_to(Path(__file__).resolve().parents[1])
    return into


def medians(found: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the samples that succeeded; the failures are listed."""
    samples = [s for s in found if "failed" not in s]
    out: dict[str, Any] = {"failed": [s["failed"] for s in found if "failed" in s]}
    if not samples:
        return out
    for name, value in samples[0].items():
        values = [s[name] for s in samples]
        if isinstance(value, bool):
            out[name] = all(values)
        elif isinstance(value, int | float):
            out[name] = round(statistics.median(values), 4)
    out["samples"] = len(samples)
    return out


def main(
    rounds: int = ROUNDS,
    memory_rounds: int = MEMORY_ROUNDS,
    *,
    only: tuple[str, ...] = tuple(SAMPLES),
    before: Path | None = None,
    variants: tuple[str, ...] = STREAM_VARIANTS,
) -> dict[str, Any]:
    """Every sample of `only`, `rounds` times, interleaved; with `before` (an earlier source tree)
    the first-paint (tail), new-session and streaming samples also run on its code in each
    round (`.before`);
    `variants` picks the streaming variants (`tail`, now, always runs)."""
    with tempfile.TemporaryDirectory() as tmp:
        earlier = None
        if before is not None:
            earlier = before_tree(before, Path(tmp) / "before")
        sessions = {}
        for turns in SIZES if {"first_paint", "scroll"} & set(only) else ():
            db = Path(tmp) / f"{turns}.sqlite"
            sessions[turns] = (db, asyncio.run(build(db, turns)))
        if "first_paint" in only:
            db = Path(tmp) / "long-reply.sqlite"
            long_reply = (db, asyncio.run(build(db, SIZES[0], last_reply=LONG_REPLY)))
        paints: dict[tuple[str, int | str], list[dict[str, Any]]] = {}
        fresh: dict[str, list[dict[str, Any]]] = {}
        fresh_runs = [("now", None)] + ([("before", earlier)] if earlier is not None else [])
        streams: dict[str, list[dict[str, Any]]] = {}
        scrolls: list[dict[str, Any]] = []
        stream_runs = [(v, None) for v in STREAM_VARIANTS if v in {*variants, "tail"}] + (
            [("before", earlier)] if earlier is not None else []
        )
        for round_ in range(rounds):
            for variant in VARIANTS if "first_paint" in only else ():  # interleaved: both
                for turns in WHOLE_LOG_SIZES if variant == "whole-log" else SIZES:
                    db, sid = sessions[turns]
                    paints.setdefault((variant, turns), []).append(
                        sample("first_paint", variant, db, sid)
                    )
            if "first_paint" in only:
                paints.setdefault(("tail", LONG_REPLY_KEY), []).append(
                    sample("first_paint", "tail", *long_reply)
                )
            if "first_paint" in only and earlier is not None:  # the same on the earlier tree
                for turns in SIZES:
                    paints.setdefault(("before", turns), []).append(
                        sample("first_paint", "tail", *sessions[turns], tree=earlier)
                    )
                paints.setdefault(("before", LONG_REPLY_KEY), []).append(
                    sample("first_paint", "tail", *long_reply, tree=earlier)
                )
            for variant, tree in fresh_runs if "new_session" in only else ():
                # an empty store of its own each time: nothing to resume, nothing cached
                db = Path(tmp) / f"new-{round_}-{variant}.sqlite"
                fresh.setdefault(variant, []).append(
                    sample("new_session", variant, db, "-", tree=tree)
                )
            for variant, tree in stream_runs if "streaming" in only else ():
                # a session of its own: a reply streamed into a shared one stays in its tail,
                # and the next sample would resume it (a 100 KB reply of a thousand blocks)
                db = Path(tmp) / f"stream-{round_}-{variant}.sqlite"
                sid = asyncio.run(build(db, SIZES[0]))
                kind = "tail" if variant == "before" else variant
                streams.setdefault(variant, []).append(
                    sample("streaming", kind, db, sid, tree=tree)
                )
            if "scroll" in only and round_ < memory_rounds:
                db, sid = sessions[SIZES[-1]]
                scrolls.append(sample("scroll", "tail", db, sid))
    out: dict[str, Any] = {"rounds": rounds}
    met: dict[str, bool] = {}
    if paints:
        paint = {
            variant: {str(t): medians(found) for (v, t), found in paints.items() if v == variant}
            for variant in (*VARIANTS, "before")
            if any(v == variant for v, _ in paints)
        }
        small = paint["tail"][str(SIZES[0])].get("paint_s", PAINT_BUDGET_S)
        large = paint["tail"][str(SIZES[-1])].get("paint_s", PAINT_BUDGET_S)
        long = paint["tail"][LONG_REPLY_KEY].get("paint_s", PAINT_BUDGET_S)
        out["first_paint"] = paint  # the baseline, whole-log, beside tail
        out["paint_ratio_10k_to_100"] = round(large / small, 2)
        out["paint_ratio_long_reply_to_100"] = round(long / small, 2)
        met["paint_within_2x"] = large <= 2 * small
        met["paint_under_1_5_s"] = large < 1.5
        met["long_reply_paint_within_2x"] = long <= 2 * small
    if fresh:
        out["new_session"] = {variant: medians(found) for variant, found in fresh.items()}
        before_paint = out["new_session"].get("before", {}).get("paint_s")
        if before_paint:
            now_paint = out["new_session"]["now"].get("paint_s", PAINT_BUDGET_S)
            out["new_session_paint_ratio_to_before"] = round(now_paint / before_paint, 2)
    if streams:
        stream = {variant: medians(found) for variant, found in streams.items()}
        now = stream["tail"]
        out["streaming"] = stream  # the baselines, one-markdown (and before), beside tail
        # kept its pace (a slow console slows the sender: the Agent reads the stream on the
        # same loop), all of it shown in order, and caught up at once when the stream ended
        met["streaming_no_backlog"] = (
            now.get("all_shown_in_order", False)
            and now.get("chars_per_s", 0) >= 0.95 * RATE
            and now.get("backlog_at_end_s", STREAM_S) < 0.5
        )
        met["key_echo_p95_under_50_ms"] = now.get("key_echo_p95_ms", KEY_BUDGET_S * 1000) < 50
    if scrolls:
        scroll = out["scroll_to_start_10k"] = medians(scrolls)
        met["memory_growth_under_100_mb"] = (
            scroll.get("reached_start", False)
            and scroll.get("peak_growth_from_paint_mb", 1e9) < 100
        )
    out["targets_met"] = met
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", nargs=4, metavar=("KIND", "VARIANT", "DB", "SESSION"))
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument(
        "--only", nargs="+", choices=tuple(SAMPLES), default=tuple(SAMPLES), help="these samples"
    )
    parser.add_argument(
        "--before", type=Path, metavar="DIR", help="an earlier source tree, measured beside"
    )
    parser.add_argument(
        "--streams", nargs="+", choices=STREAM_VARIANTS, default=STREAM_VARIANTS, help="variants"
    )
    args = parser.parse_args()
    if args.sample:
        kind, variant, db, session_id = args.sample
        print(json.dumps(asyncio.run(SAMPLES[kind](variant, Path(db), session_id))))
    else:
        figures = main(
            args.rounds, only=tuple(args.only), before=args.before, variants=tuple(args.streams)
        )
        print(json.dumps(figures, indent=2))
