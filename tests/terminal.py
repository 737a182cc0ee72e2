"""The real `trellis` in a pseudo-terminal, read as a person reads it.

`Terminal` runs the command in a pty (pexpect) and feeds what it writes to a terminal emulator
(pyte), so a test sends the bytes a terminal sends for a key (`KEYS`) and asserts on the screen as
drawn: the text of each row, not the escape sequences that drew it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

import pexpect
import pyte

from tests.agent.harness import trellis_argv, trellis_env

KEYS: Mapping[str, str] = {
    # what xterm (TERM=xterm-256color) sends; Textual names the key as in the left column
    "enter": "\r",
    "tab": "\t",
    "shift+tab": "\x1b[Z",
    "escape": "\x1b",
    "space": " ",
    "backspace": "\x7f",
    "up": "\x1b[A",
    "down": "\x1b[B",
    "right": "\x1b[C",
    "left": "\x1b[D",
    "home": "\x1b[H",
    "end": "\x1b[F",
    "pageup": "\x1b[5~",
    "pagedown": "\x1b[6~",
    "delete": "\x1b[3~",
    "f1": "\x1bOP",
    "f2": "\x1bOQ",
    "f3": "\x1bOR",
    "f4": "\x1bOS",
    "f5": "\x1b[15~",
    "f8": "\x1b[19~",
    "shift+enter": "\x1b[13;2u",  # CSI-u, where the terminal reports it (kitty, WezTerm, foot)
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    **{f"ctrl+{c}": chr(ord(c) - ord("a") + 1) for c in "abcdefghijklmnopqrstuvwxyz"},
}
"""Terminal bytes per Textual key name. Ctrl+letter is the control character (Ctrl+J is a line
feed, Ctrl+M a carriage return: the terminal cannot tell Ctrl+M from Enter)."""

ESCAPE_WAIT = 0.15
"""Seconds to wait after a lone Esc: Textual waits that long for the rest of an escape sequence
before taking Esc as a key of its own."""


class Terminal:
    """`trellis ARGS` in a pty of `rows` x `columns`, with TRELLIS_HOME and TRELLIS_CONFIG under
    `home`; the environment carries no API key and no Trellis setting of the machine's."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        home: Path,
        cwd: Path,
        config: Path | None = None,
        rows: int = 30,
        columns: int = 100,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if config is None:
            config = home / "config.toml"
            config.parent.mkdir(parents=True, exist_ok=True)
            if not config.exists():
                config.write_text("", encoding="utf-8")
        environment = trellis_env(home=home / "data", config=config)
        environment.pop("NO_COLOR", None)
        # the program takes its size from the pty, not from a size the test runner set (a
        # pytest-xdist worker has COLUMNS=80 and LINES=24, which Textual would obey)
        environment.pop("COLUMNS", None)
        environment.pop("LINES", None)
        environment["TERM"] = "xterm-256color"
        environment.update(env or {})
        argv = trellis_argv(list(args))
        self.cwd = cwd
        """The folder the program runs in (its workspace)."""
        self.pressed: list[str] = []
        """Every key `press` sent, by its Textual name, in order (the key tests check a step
        pressed the keys it says it covers)."""
        self.screen = pyte.Screen(columns, rows)
        self._stream = pyte.ByteStream(self.screen)
        self.child = pexpect.spawn(
            argv[0], argv[1:], cwd=str(cwd), env=environment, dimensions=(rows, columns)
        )

    # --- reading ---------------------------------------------------------------------------------

    def _drain(self, wait: float) -> None:
        """Feed the emulator whatever the program wrote within `wait` seconds."""
        try:
            data = self.child.read_nonblocking(1 << 16, timeout=wait)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            return
        self._stream.feed(data)
        while True:  # the rest of a burst, without waiting again
            try:
                data = self.child.read_nonblocking(1 << 16, timeout=0)
            except (pexpect.TIMEOUT, pexpect.EOF):
                return
            self._stream.feed(data)

    def lines(self) -> list[str]:
        """The screen as drawn now, a string per row (trailing blanks kept)."""
        self._drain(0.05)
        return list(self.screen.display)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.lines())

    def wait_until(
        self, condition: Callable[[str], bool], *, timeout: float = 30.0, what: str = ""
    ) -> str:
        """The screen's text once `condition` holds for it; fails with the screen shown when it
        does not within `timeout` seconds (a bound on a hung program, not a measurement)."""
        deadline = time.monotonic() + timeout
        while True:
            self._drain(0.05)
            text = "\n".join(line.rstrip() for line in self.screen.display)
            if condition(text):
                return text
            if time.monotonic() > deadline or not self.child.isalive():
                raise AssertionError(
                    f"the screen never showed {what or 'what was awaited'}:\n{text}"
                )

    def wait_for(self, needle: str, *, timeout: float = 30.0) -> str:
        """The screen's text once `needle` is on it."""
        return self.wait_until(lambda text: needle in text, timeout=timeout, what=repr(needle))

    def wait_gone(self, needle: str, *, timeout: float = 30.0) -> str:
        """The screen's text once `needle` is no longer on it."""
        return self.wait_until(
            lambda text: needle not in text, timeout=timeout, what=f"{needle!r} gone"
        )

    def settle(self, quiet: float = 0.3, *, timeout: float = 10.0) -> str:
        """The screen once the program has written nothing for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            before = self.screen.display
            self._drain(quiet)
            if self.screen.display == before:
                break
        return self.text()

    # --- writing ---------------------------------------------------------------------------------

    def press(self, *keys: str) -> None:
        """Each key as the terminal sends it (`KEYS`; a single character is itself)."""
        for key in keys:
            data = KEYS.get(key, key if len(key) == 1 else None)
            if data is None:
                raise KeyError(f"no terminal bytes known for the key {key!r}")
            self.child.send(data)
            self.pressed.append(key)
            if data == "\x1b":
                self._drain(ESCAPE_WAIT)

    def write(self, text: str) -> None:
        """Characters typed, as the terminal sends them (no key names)."""
        self.child.send(text)

    # --- ending ----------------------------------------------------------------------------------

    def close(self) -> int | None:
        """Stop the program if it still runs; its exit status (None when it was killed)."""
        if self.child.isalive():
            self.child.close(force=True)
        else:
            self.child.close()
        status: int | None = self.child.exitstatus
        return status

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
