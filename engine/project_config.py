"""What a project's config may set before the user trusts it (docs/ARCHITECTURE.md, "Configuration
and trust").

An untrusted `.trellis/config.toml` is someone else's file: a cloned repository wrote it. Only keys
that can neither run anything, nor send data or credentials anywhere new, nor lower a privacy
setting apply; every other key is skipped and reported with the reason, so a front end can ask the
user ("trust this project, or continue without these") and load again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from engine.privacy import PrivacyClass

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_MODEL_ENTRY = "a model entry defined by the project: where requests, your data and keys go"
_MODEL_FIELD = "changes a model entry you defined: where requests, your data and keys go"
_UNKNOWN_MODEL = "names a model entry you did not define and that was not detected"
_REMOTE_MODEL = (
    "names a provider your environment's key reaches: where your data goes is yours to pick "
    "(/model, or default_model in your own config)"
)
_DISCOVERY_ON = "asks local servers for their models, which your config turned off"
_SECTIONS = {
    "mcp_servers": "starts programs",
    "areas": "imports and runs Python code",
    "serve": "changes who can reach `trellis serve`",
    "checkpoints": "changes what a rewind can put back of your files (off, or files left out)",
    "telemetry": "sends your sessions' traces to an endpoint, or changes what they carry",
}
_CONTEXT_LIMITS = frozenset(
    {"char_cap", "turn_window", "eviction_batch", "instruction_max_bytes", "system_prompt"}
)
_AGENT_LIMITS = frozenset({"max_steps", "tool_timeout", "max_tool_output"})
_AGENT_PROTECTED_WRITES = "lets the agent's write tools change Trellis configuration"


@dataclass(frozen=True, slots=True, kw_only=True)
class SkippedKey:
    """One project key that waits for trust: its dotted name, why, and the value it would set."""

    key: str
    reason: str
    value: object


@dataclass(frozen=True, slots=True, kw_only=True)
class UserBaseline:
    """What the user's own configuration puts in force, against which a project key is judged."""

    models: frozenset[str]
    """The entries the user's file defines, the built-in one and those detected from the user's
    environment (`engine.model_catalog`)."""
    shell_class: PrivacyClass
    secret_patterns: frozenset[str]
    instruction_files: frozenset[str]
    local_servers: frozenset[str] = frozenset()
    """The local servers whose models (`NAME/MODEL`) may be named before they are found: they
    serve from this machine, so naming one sends nothing anywhere new."""
    local_discovery: bool = True
    remote_detected: frozenset[str] = frozenset()
    """The entries the environment's provider keys make (`openai`, ...): a project may not pick
    them, since they send requests off this machine."""

    def names_model(self, name: str) -> bool:
        """Whether a `default_model` of `name` picks one of the user's own destinations."""
        server, slash, model = name.partition("/")
        return name in self.models or bool(slash and model and server in self.local_servers)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectLayer:
    """The project's config file as this load saw it, and how much of it applied."""

    directory: Path
    """The project directory (the one holding `.trellis/`), resolved: the key of its trust."""
    file: Path
    digest: str
    """SHA-256 of the bytes that were read and parsed."""
    trusted: bool
    """True when the whole file applied (trust recorded for this digest, or given for one run)."""
    skipped: tuple[SkippedKey, ...] = ()

    def notice(self) -> str | None:
        """One line naming the skipped keys and the way to apply them; None if nothing was."""
        if not self.skipped:
            return None
        keys = ", ".join(skipped.key for skipped in self.skipped)
        return (
            f"untrusted project config {self.file}: skipped {keys} "
            f"(trust it with `trellis trust {self.directory}`, or pass --trust-project)"
        )


def untrusted_subset(
    layer: Mapping[str, Any], baseline: UserBaseline
) -> tuple[dict[str, Any], tuple[SkippedKey, ...]]:
    """The part of an untrusted project layer that may apply, and every key left out with why.

    A key this policy does not know is kept, so validation reports it as unknown with the file.
    """
    applied: dict[str, Any] = {}
    skipped: list[SkippedKey] = []
    for key, value in layer.items():
        match key:
            case "default_model" if isinstance(value, str) and value in baseline.remote_detected:
                skipped.append(SkippedKey(key=key, reason=_REMOTE_MODEL, value=value))
            case "default_model" if isinstance(value, str) and not baseline.names_model(value):
                skipped.append(SkippedKey(key=key, reason=_UNKNOWN_MODEL, value=value))
            case "discovery" if isinstance(value, Mapping):
                applied[key] = _keep(value, "discovery", _discovery_rule(baseline), skipped)
            case "models":
                skipped.extend(_model_keys(value, baseline))
            case "context" if isinstance(value, Mapping):
                applied[key] = _keep(value, "context", _context_rule(baseline), skipped)
            case "agent" if isinstance(value, Mapping):
                applied[key] = _keep(value, "agent", _agent_rule, skipped)
            case _ if key in _SECTIONS:
                skipped.append(SkippedKey(key=key, reason=_SECTIONS[key], value=value))
            case _:
                applied[key] = value
    return applied, tuple(skipped)


def _model_keys(value: object, baseline: UserBaseline) -> list[SkippedKey]:
    """Every model key is skipped: a new entry is a new destination, a changed field may send the
    user's key to a new one (entries merge field by field)."""
    if not isinstance(value, Mapping):
        return [SkippedKey(key="models", reason=_MODEL_ENTRY, value=value)]
    found: list[SkippedKey] = []
    for name, entry in value.items():
        key = dotted_key(("models", name))
        if name not in baseline.models or not isinstance(entry, Mapping):
            found.append(SkippedKey(key=key, reason=_MODEL_ENTRY, value=entry))
            continue
        found.extend(
            SkippedKey(key=dotted_key(("models", name, field)), reason=_MODEL_FIELD, value=v)
            for field, v in entry.items()
        )
    return found


_Rule = Callable[[str, object], str | None]
"""The reason a key of a table is skipped, or None to apply it."""


def _keep(
    table: Mapping[str, Any], section: str, rule: _Rule, skipped: list[SkippedKey]
) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in table.items():
        reason = rule(key, value)
        if reason is None:
            kept[key] = value
        else:
            skipped.append(SkippedKey(key=f"{section}.{key}", reason=reason, value=value))
    return kept


def _context_rule(baseline: UserBaseline) -> _Rule:
    def rule(key: str, value: object) -> str | None:
        if key in _CONTEXT_LIMITS:
            return None
        match key:
            case "shell_class" if isinstance(value, str) and value in PrivacyClass.__members__:
                if PrivacyClass[value] < baseline.shell_class:
                    return f"lowers the privacy class of shell output below {baseline.shell_class.name}"
            case "secret_patterns" if _strings(value):
                dropped = sorted(baseline.secret_patterns - set(value))
                if dropped:
                    return f"drops secret patterns in force: {', '.join(dropped)}"
            case "instruction_files" if _strings(value):
                extra = sorted(set(value) - baseline.instruction_files)
                if extra:
                    return f"puts other files into every request: {', '.join(extra)}"
            case _:
                pass  # a wrong type or an unknown key: validation names it with the file
        return None

    return rule


def _discovery_rule(baseline: UserBaseline) -> _Rule:
    def rule(key: str, value: object) -> str | None:
        if key == "local" and value is True and not baseline.local_discovery:
            return _DISCOVERY_ON
        return None  # turning it off only asks less; a wrong key is named by validation

    return rule


def _agent_rule(key: str, value: object) -> str | None:
    if key in _AGENT_LIMITS:
        return None
    if key == "allow_protected_writes":
        return _AGENT_PROTECTED_WRITES
    return None


def _strings(value: object) -> TypeGuard[Sequence[str]]:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and all(isinstance(item, str) for item in value)
    )


def dotted_key(loc: Sequence[str | int]) -> str:
    """`models.local.context_window`, `areas[0].path`, `models."gpt-4.1".model`."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
            continue
        name = part if _BARE_KEY.match(part) else f'"{part}"'
        text = f"{text}.{name}" if text else name
    return text
