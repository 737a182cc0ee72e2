"""What the prompt offers while typing: slash commands from the engine's registry and `@path`
workspace files (`app.attachment_files` reads them when the prompt is sent).

Pure functions over text and the file system (no widgets), so they are tested directly.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from engine.commands import Command
from engine.tools.workspace import relative_to_workspace

MAX_PATHS = 200
"""Workspace files the `@` completion looks at, at most, so a huge tree never stalls typing."""
SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__", ".trellis"}
)


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A completion: the text that replaces the word being typed, and what it is. `sends`: taken
    with Enter, the prompt is sent at once (a command that needs no argument)."""

    replacement: str
    label: str
    hint: str = ""
    sends: bool = False


@dataclass(frozen=True, slots=True)
class Offer:
    """The suggestions for what was typed (`stem`), the one highlighted, and whether the prompt
    holds it (`taken`: Tab put it there, and the next Tab takes the next one)."""

    stem: str
    suggestions: tuple[Suggestion, ...]
    highlighted: int = 0
    taken: bool = False

    @property
    def current(self) -> Suggestion:
        return self.suggestions[self.highlighted]

    @property
    def text(self) -> str:
        """The stem completed with the highlighted suggestion."""
        return complete(self.stem, self.current)

    def moved(self, step: int) -> Offer:
        """The highlight `step` suggestions on, round the ends."""
        return replace(self, highlighted=(self.highlighted + step) % len(self.suggestions))


def command_suggestions(text: str, commands: tuple[Command, ...]) -> list[Suggestion]:
    """Commands whose name starts with what follows `/` on the first line (before any space)."""
    if not text.startswith("/") or "\n" in text:
        return []
    name, space, _ = text[1:].partition(" ")
    if space:  # the name is complete: show its usage only
        return [Suggestion(text, c.usage, c.description) for c in commands if c.name == name]
    return [
        Suggestion(f"/{c.name} ", c.usage, c.description, sends=not c.needs_argument)
        for c in commands
        if c.name.startswith(name)
    ]


def current_mention(text: str) -> str | None:
    """The `@word` being typed at the end of the text (without the `@`), if any."""
    match = re.search(r"(?:^|\s)@(\S*)$", text)
    return match.group(1) if match else None


def path_suggestions(prefix: str, root: Path, limit: int = 8) -> list[Suggestion]:
    """Workspace files whose relative path contains `prefix` (prefix matches first)."""
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            found.append(relative_to_workspace(root, Path(directory) / name))
        if len(found) >= MAX_PATHS:
            break
    lowered = prefix.lower()
    starts = [p for p in found if p.lower().startswith(lowered)]
    contains = [p for p in found if lowered in p.lower() and p not in starts]
    return [Suggestion(f"@{p} ", p, "file") for p in (starts + contains)[:limit]]


def complete(text: str, suggestion: Suggestion) -> str:
    """The text with the word being typed replaced by the suggestion."""
    if text.startswith("/") and suggestion.replacement.startswith("/"):
        return suggestion.replacement
    mention = current_mention(text)
    if mention is None:
        return text
    return text[: len(text) - len(mention) - 1] + suggestion.replacement
