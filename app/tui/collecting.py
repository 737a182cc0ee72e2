"""The console's one `TurnCollector`: the process has one collector, whose policy is
`engine/collector.py`'s; the main screen holds and releases it with the turns, the reply's entries
tell it when they grew."""

from __future__ import annotations

from engine.collector import TurnCollector

turns = TurnCollector()
