"""The Textual console: a live view of one session, and its replay, driven by the engine's events.

Importing this package imports Textual; the CLI imports it only for the commands that open the
console, so headless commands stay fast.
"""
