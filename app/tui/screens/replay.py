"""The replay screen: a stored session played back through the same transcript and side panel.

`replay.player` drives `replay.timeline` (seekable through its checkpoints); the transcript projection
follows forward steps event by event and is rebuilt when the position moves back. The side panel and
the inspector show the state as of the current seq.

A followed log (`replay_following`, on PostgreSQL) grows while the screen is open: the position
bar's end moves with it, and a player that plays at the end (`live`) plays each new event as it
comes; paused or stepped back, the position stays where the user put it.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from collections.abc import Sequence
from contextlib import suppress
from typing import ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Static

from app.tui.screens.inspector import ContextInspector, StepSpend
from app.tui.screens.replay_following import FollowedLog
from app.tui.widgets.key_footer import KeyFooter
from app.tui.widgets.side_panel import GcRow, SidePanel
from app.tui.widgets.status_line import meter
from app.tui.widgets.transcript_view import TranscriptView
from app.tui.widgets.window_breakdown import BreakdownView
from engine.config import Config
from engine.context.usage import UsageTally
from engine.events import Event, TurnStart
from engine.gateway.base import GatewayType
from replay.player import Player
from replay.timeline import Timeline, TimelineState
from replay.transcript import Transcript, changes_shown_by

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, float("inf"))
STEP = Binding.Group("Step", compact=True)
SPEED = Binding.Group("Speed", compact=True)
"""The footer shows each pair of keys once, under one word (`← → Step`); F1 lists each key."""


class PositionBar(Static):
    """`▶ 2x  seq 120/450  turn 3/9  ▕██████░░░░▏`: where the replay stands."""

    DEFAULT_CSS = """
    PositionBar {
        height: 1;
        background: $panel;
        padding: 0 1;
    }
    """


class ReplayScreen(Screen[None]):
    """Space plays or pauses, arrows step, [ and ] change the speed, t jumps to the next turn."""

    DEFAULT_CSS = """
    ReplayScreen #body, ReplayScreen #conversation {
        height: 1fr;
    }
    """

    FOOTER_SPARE: ClassVar[tuple[str, ...]] = ("sessions", "speed(1)", "speed(-1)")
    """What the footer leaves out first when it is narrow (`KeyFooter`): Esc goes back to the
    browser a replay was opened from, and speed is a refinement."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle_play", "Play"),
        # priority: the focused transcript's own keys (Left/Right scroll sideways, Home/End to
        # either end of what is mounted) would shadow them
        Binding("left", "step(-1)", "Step back", key_display="←", priority=True, group=STEP),
        Binding("right", "step(1)", "Step forward", key_display="→", priority=True, group=STEP),
        Binding("t", "turn(1)", "Next turn"),
        Binding("T", "turn(-1)", "Previous turn", show=False),
        Binding("home", "seek_start", "To the start", show=False, priority=True),
        Binding("end", "seek_end", "To the end", show=False, priority=True),
        # the names Textual gives the keys `]` and `[`
        Binding("left_square_bracket", "speed(-1)", "Slower", key_display="[", group=SPEED),
        Binding("right_square_bracket", "speed(1)", "Faster", key_display="]", group=SPEED),
        Binding("f2", "toggle_panel", "Panel"),
        Binding("f3", "inspect", "Inspect"),
        Binding("f8", "budget", "Budget", show=False),
        Binding("escape,q", "close", "Close"),
    ]

    playing: reactive[bool] = reactive(False)
    speed_index: reactive[int] = reactive(1)

    def __init__(
        self,
        events: Sequence[Event],
        *,
        gateway_type: GatewayType = GatewayType.scripted,
        config: Config | None = None,
        title: str = "",
        followed: FollowedLog | None = None,
        at_seq: int | None = None,
    ) -> None:
        super().__init__()
        self.at_seq = at_seq
        """Where the replay opens (a search match: played up to and with it), else its start."""
        self.log_events = list(events)  # a followed log grows: the player reads this list
        self.title_text = title
        self.followed = followed
        self.writer = followed.holder if followed is not None else None
        self._had_writer = self.writer is not None
        self._arrived = asyncio.Event()
        self._feed: asyncio.Task[None] | None = None
        self.timeline = Timeline(gateway_type, config=config)
        self.player: Player[TimelineState] = Player(self.log_events, lambda: self.timeline)
        self.transcript = Transcript()
        self._turn_starts = [
            i for i, e in enumerate(self.log_events) if isinstance(e.data, TurnStart)
        ]
        self._play_task: asyncio.Task[None] | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            with Vertical(id="conversation"):
                yield TranscriptView(self.transcript, id="transcript")
            yield SidePanel(id="panel")
        yield PositionBar(id="position")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one(SidePanel).follow_width(self.app.size.width)
        self.call_after_refresh(self._open)  # not mounted yet while its mount is handled
        if self.followed is not None:
            self._feed = asyncio.create_task(self.followed.run(self))

    def _open(self) -> None:
        if self.at_seq is None:
            self._show()
            return
        found = next((i for i, e in enumerate(self.log_events) if e.seq == self.at_seq), None)
        self.seek(len(self.log_events) if found is None else found + 1)

    async def on_unmount(self) -> None:
        feed, self._feed = self._feed, None
        if feed is not None:
            feed.cancel()
            with suppress(asyncio.CancelledError):
                await feed
        if self.followed is not None:
            await self.followed.aclose()

    # --- following -------------------------------------------------------------------------------

    def extend(self, event: Event) -> None:
        """The writer committed the log's next event: the bar's end grows, and a player waiting
        at the end plays it."""
        if isinstance(event.data, TurnStart):
            self._turn_starts.append(len(self.log_events))
        self.log_events.append(event)
        self._arrived.set()
        self._show_position()

    def writer_is(self, holder: str | None) -> None:
        """Who writes the followed session now (None: no one)."""
        self._had_writer = self._had_writer or holder is not None
        self.writer = holder
        self._show_position()

    # --- moving ----------------------------------------------------------------------------------

    def _forward(self) -> bool:
        event = self.player.step_forward()
        if event is None:
            return False
        change = self.transcript.apply(event)
        if change:
            self.query_one(TranscriptView).apply(change)
        return True

    def seek(self, position: int) -> None:
        """Go to `position` events played; backward rebuilds the transcript from the log."""
        position = max(0, min(position, len(self.log_events)))
        if position < self.player.position:
            self.player.seek(position)
            self.transcript = Transcript()
            for event in self.log_events[:position]:
                self.transcript.apply(event)
            view = self.query_one(TranscriptView)
            view.transcript = self.transcript
            view.rebuild()
        else:
            while self.player.position < position and self._forward():
                pass
        self._show()

    def action_step(self, delta: int) -> None:
        self._stop()
        self.seek(self.player.position + delta)
        self._reveal_changes()

    def _reveal_changes(self) -> None:
        """Stepped onto what a turn or a command changed in the workspace: its entry (the turn's
        rule, the command's card) opens on the diffs and takes focus."""
        position = self.player.position
        if position == 0:
            return
        shown = changes_shown_by(self.log_events[position - 1].data)
        if shown:
            self.query_one(TranscriptView).reveal(shown[0])

    def action_turn(self, delta: int) -> None:
        self._stop()
        here = self.player.position
        starts = self._turn_starts
        if delta > 0:
            later = [s + 1 for s in starts if s + 1 > here]
            self.seek(later[0] if later else len(self.log_events))
        else:
            index = bisect_right([s + 1 for s in starts], here - 1) - 1
            self.seek(starts[index] + 1 if index >= 0 else 0)

    def action_seek_start(self) -> None:
        self._stop()
        self.seek(0)

    def action_seek_end(self) -> None:
        """To the end; a followed log then plays live, each new event as it comes."""
        self._stop()
        self.seek(len(self.log_events))
        if self.followed is not None:
            self.action_toggle_play()

    def action_speed(self, delta: int) -> None:
        self.speed_index = max(0, min(self.speed_index + delta, len(SPEEDS) - 1))
        self._show()

    def action_toggle_play(self) -> None:
        if self.playing:
            self._stop()
        else:
            self.playing = True
            self._play_task = asyncio.create_task(self._play())
        self._show()

    async def _play(self) -> None:
        """At the original pace (idle gaps capped by the player) times the speed. A followed log
        played to its end waits there, live: each event that comes is played as it comes."""
        live = False
        try:
            while self.playing:
                if self.player.at_end:
                    if self.followed is None:
                        break
                    live = True
                    self._arrived.clear()
                    self._show_position()
                    await self._arrived.wait()
                    continue
                position = self.player.position
                if position > 0 and not live:
                    gap = self.log_events[position].time - self.log_events[position - 1].time
                    delay = min(max(gap, 0.0), 2.0) / SPEEDS[self.speed_index]
                    if delay > 0:
                        await asyncio.sleep(delay)
                if not self.playing:
                    break
                self._forward()
                self._show()
        finally:
            self.playing = False
            self._show()

    def _stop(self) -> None:
        self.playing = False
        if self._play_task is not None:
            self._play_task.cancel()
            self._play_task = None

    # --- showing ----------------------------------------------------------------------------------

    @property
    def live(self) -> bool:
        """Playing a followed log at its end: new events are shown as they come."""
        return self.playing and self.followed is not None and self.player.at_end

    def _show(self) -> None:
        if not self.is_mounted:
            return
        state = self.player.state()
        seq = self.player.seq
        panel = self.query_one(SidePanel)
        panel.areas = state.areas
        panel.collections = tuple(
            GcRow(
                areas=c.areas,
                earliest=c.earliest,
                reclaimed=len(c.reclaimed),
                promoted=c.promoted,
                carried=c.carried,
                compaction=c.compaction,
            )
            for c in state.collections
        )
        panel.usage = self.timeline.usage_at(seq)
        panel.assembly = self.timeline.request_at(seq)
        self._show_position()

    def _show_position(self) -> None:
        bars = self.query(PositionBar)
        if not bars:  # not mounted yet, or taken down while a followed log's writer changed
            return
        seq = self.player.seq
        total = len(self.log_events)
        turns = len(self._turn_starts)
        turn = bisect_right([s for s in self._turn_starts], self.player.position - 1)
        speed = SPEEDS[self.speed_index]
        bar = Text.assemble(
            ("● live" if self.live else "▶ " if self.playing else "‖ ", "bold"),
            ("" if self.live else "max" if speed == float("inf") else f"{speed:g}x", "bold"),
            f"  seq {_seq_text(seq)}/{_seq_text(total - 1)}  turn {turn}/{turns}  ",
            meter(self.player.position, total, 30),
            (f"  {self.title_text}" if self.title_text else "", "dim"),
            (f"  {self._following()}" if self.followed is not None else "", "italic"),
        )
        bars.first().update(bar)

    def _following(self) -> str:
        """What the bar says of a followed log's writer."""
        if self.writer is not None:
            return f"following: {self.writer} writes it"
        if self._had_writer:
            return "following: its writer let go"
        return "following: no one writes it now"

    def action_toggle_panel(self) -> None:
        self.query_one(SidePanel).toggle()

    def on_resize(self, event: events.Resize) -> None:
        self.query_one(SidePanel).follow_width(event.size.width)

    def action_inspect(self, focus: str | None = None) -> None:
        seq = self.player.seq
        current = self.timeline.request_at(seq)
        state = self.player.state()
        previous = None
        if state.last_step_seq is not None:
            previous = self.timeline.request_at(state.last_step_seq - 1)
        tally = UsageTally()
        for event in self.timeline.events:
            if event.seq > seq:
                break
            tally.take(event.data)
        self.app.push_screen(ContextInspector(current, previous, StepSpend.of(tally), focus=focus))

    @on(BreakdownView.Inspect)
    def _inspect_part(self, message: BreakdownView.Inspect) -> None:
        self.action_inspect(message.ref)

    def action_budget(self) -> None:
        """What filled the window at this position, its largest parts under the keyboard;
        again: the keyboard back to the player."""
        if not self.query_one(SidePanel).show_budget():
            self.set_focus(None)

    def action_close(self) -> None:
        self._stop()
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.exit()


NO_SEQ = "\N{EN DASH}"
"""What the position bar shows for a seq before the first event."""


def _seq_text(seq: int) -> str:
    """A seq for the position bar; before the first event (or in an empty log) there is none."""
    return str(seq) if seq >= 0 else NO_SEQ
