"""Privacy labels by provenance, and the egress gate that refuses a request above its model's class.

The label table (docs/spec/context-orchestration.md, privacy): direct user input and workspace files
are internal; files matching the secret patterns are restricted; a tool result carries the label of
what it read and `run_shell` output the configured shell class; injected context the class its
producer declares (default internal); an assistant message the join of the request it answered;
anything without provenance is restricted. Joins never lower a label.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from pathlib import PurePath
from typing import Protocol, assert_never
from urllib.parse import urlsplit

from engine.context.provenance import ItemKind, Provenance
from engine.errors import TrellisError
from engine.privacy import PrivacyClass, PrivatizationLabel, join_all

DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (".env*", "*.pem", "*.key", "id_*", "*credentials*")
"""File names whose content is restricted wherever they lie in the workspace."""

DEFAULT_SHELL_CLASS = PrivacyClass.internal
"""The class of `run_shell` output unless the configuration says otherwise."""

SHELL_TOOL = "run_shell"
"""The tool whose output takes the configured shell class: a command may read anything."""

_LOOPBACK_HOSTS = frozenset({"localhost", "localhost.localdomain"})


def is_secret_path(path: str | PurePath, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS) -> bool:
    """True when any component of the path matches a secret pattern (case-insensitive)."""
    parts = [p.lower() for p in PurePath(path).parts]
    lowered = [p.lower() for p in patterns]
    return any(fnmatchcase(part, pattern) for part in parts for pattern in lowered)


def secret_label(
    path: str | PurePath, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS
) -> PrivatizationLabel:
    """The label of a workspace file: restricted when it matches a secret pattern, else internal."""
    name = PurePath(path).as_posix()
    cls = PrivacyClass.restricted if is_secret_path(path, patterns) else PrivacyClass.internal
    return PrivatizationLabel.of(cls, f"file:{name}")


def tool_result_label(
    tool: str,
    read_paths: Iterable[str | PurePath] = (),
    *,
    secret_patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS,
    shell_class: PrivacyClass = DEFAULT_SHELL_CLASS,
) -> PrivatizationLabel:
    """What a tool result carries: the join of the files it read, and the shell class for the shell."""
    labels = [secret_label(p, secret_patterns) for p in read_paths]
    labels.append(
        PrivatizationLabel(cls=shell_class if tool == SHELL_TOOL else PrivacyClass.internal)
    )
    return join_all(labels)


def default_egress_class(provider: str, base_url: str | None = None) -> PrivacyClass:
    """Scripted and loopback endpoints may receive anything; a remote one at most internal."""
    if provider == "scripted":
        return PrivacyClass.restricted
    if base_url is None:
        return PrivacyClass.internal
    host = (urlsplit(base_url).hostname or "").lower()
    if host in _LOOPBACK_HOSTS:
        return PrivacyClass.restricted
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    return PrivacyClass.restricted if loopback else PrivacyClass.internal


def _declared_or(declared: PrivatizationLabel | None, cls: PrivacyClass) -> PrivatizationLabel:
    return PrivatizationLabel(cls=cls) if declared is None else declared


def label_for_provenance(
    provenance: Provenance | None, *, shell_class: PrivacyClass = DEFAULT_SHELL_CLASS
) -> PrivatizationLabel:
    """The label of one Context item; a label stored on the provenance wins, never lowered by default."""
    if provenance is None:
        return PrivatizationLabel(cls=PrivacyClass.restricted)  # spec: no provenance, restricted
    declared = provenance.label
    match provenance.kind:
        case ItemKind.message:
            if declared is not None:
                return declared
            if provenance.source is None:
                return PrivatizationLabel(cls=PrivacyClass.restricted)  # unknown producer
            return PrivatizationLabel(cls=PrivacyClass.internal)  # user input, injected default
        case ItemKind.tool_result:
            source = provenance.source
            if source is not None and source.name == SHELL_TOOL:
                shell = PrivatizationLabel(cls=shell_class)
                return shell if declared is None else declared.join(shell)
            # spec: unknown lineage is restricted; tools declare what they read
            return _declared_or(declared, PrivacyClass.restricted)
        case ItemKind.area:
            return _declared_or(declared, PrivacyClass.internal)  # the producer's default
        case ItemKind.assistant | ItemKind.promoted | ItemKind.summary:
            # derived material inherits its sources; without a stored label they are unknown
            return _declared_or(declared, PrivacyClass.restricted)
        case _:
            assert_never(provenance.kind)


def describe_item(provenance: Provenance | None, index: int) -> str:
    """A short account of an item's origin for an error a user has to act on."""
    if provenance is None:
        return f"an item without provenance at Context index {index}"
    source = provenance.source
    match provenance.kind:
        case ItemKind.message:
            if source is None:
                what = "a message of unknown source"
            elif source.is_user:
                what = "user message"
            else:
                what = f"injected context from {source}"
        case ItemKind.tool_result:
            what = f"tool result of {source.name or source.kind}" if source else "tool result"
        case ItemKind.assistant:
            what = "assistant message"
        case ItemKind.area:
            what = f"render of area {provenance.owner}" if provenance.owner else "area render"
        case ItemKind.promoted:
            what = "promoted message"
        case ItemKind.summary:
            what = "compaction summary"
        case _:
            assert_never(provenance.kind)
    label = provenance.label
    if label is not None and label.parents:
        what += f" ({', '.join(sorted(label.parents))})"
    where = f"seq {provenance.seq}" if provenance.seq is not None else f"Context index {index}"
    return f"{what} at {where}"


class LabelledBlock(Protocol):
    """What the gate needs of a floor block."""

    @property
    def layer(self) -> int: ...
    @property
    def key(self) -> str: ...
    @property
    def label(self) -> PrivatizationLabel: ...


class GateInput(Protocol):
    """What the gate needs of an assembled request (`AssembledContext` is one)."""

    @property
    def floor(self) -> Sequence[LabelledBlock]: ...
    @property
    def indices(self) -> Sequence[int]: ...
    @property
    def provenances(self) -> Sequence[Provenance | None]: ...
    @property
    def labels(self) -> Sequence[PrivatizationLabel]: ...


class EgressRefusedError(TrellisError):
    """A request would carry material above its model's egress class; nothing was sent."""

    privacy_class: PrivacyClass
    allowed: PrivacyClass
    source: str
    model: str

    def __init__(
        self, *, privacy_class: PrivacyClass, allowed: PrivacyClass, source: str, model: str
    ) -> None:
        message = (
            f"{source} is {privacy_class.name}; model {model!r} accepts at most {allowed.name}"
            " (fork the session before that material to continue with this model)"
        )
        super().__init__(message)
        self.privacy_class = privacy_class
        self.allowed = allowed
        self.source = source
        self.model = model


class EgressGate:
    """Refuses a request above its model entry's egress class, naming the earliest offending source."""

    @staticmethod
    def check(request: GateInput, *, egress_class: PrivacyClass, model: str) -> None:
        """Return when every block and item is at most `egress_class`, else raise `EgressRefusedError`."""
        for block in request.floor:
            if block.label.cls > egress_class:
                raise EgressRefusedError(
                    privacy_class=block.label.cls,
                    allowed=egress_class,
                    source=f"floor block {block.key} (layer {int(block.layer)})",
                    model=model,
                )
        for index, provenance, label in zip(
            request.indices, request.provenances, request.labels, strict=True
        ):
            if label.cls > egress_class:
                raise EgressRefusedError(
                    privacy_class=label.cls,
                    allowed=egress_class,
                    source=describe_item(provenance, index),
                    model=model,
                )
