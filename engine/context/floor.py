"""The stable floor: identity, codex, environment and karma as typed, hashed Blocks.

The floor is the part of every request that changes rarely, so it has a reproducible digest
(`prefix_digest`) and each distinct block is logged once (`floor/block`), letting replay show the
exact floor of every request from the hashes in `step/start`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path, PurePosixPath

from engine.context.egress import DEFAULT_SECRET_PATTERNS, secret_label
from engine.events import FloorBlock, Payload, PinAdd, PinRemove
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.tools.workspace import (
    NotRegularFileError,
    WorkspaceEscapeError,
    open_regular,
    resolve_in_workspace,
)

DEFAULT_INSTRUCTION_FILES: tuple[str, ...] = ("AGENTS.md", "TRELLIS.md")
"""The project instruction files read into the codex layer, in this order."""

DEFAULT_INSTRUCTION_MAX_BYTES = 32_768
"""Each instruction file enters the codex verbatim up to this many bytes."""

FLOOR_SEPARATOR = "\n\n"
"""Between block texts in the request's system field."""

_INTERNAL = PrivatizationLabel(cls=PrivacyClass.internal)


class Layer(IntEnum):
    """The four layers of the stable floor, in request order."""

    identity = 1
    codex = 2
    environment = 3
    karma = 4


def text_hash(text: str) -> str:
    """SHA-256 of the UTF-8 text, hex: a block's content hash."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """One floor block; `content_hash` is checked against the text, so a Block is always honest."""

    layer: Layer
    key: str
    text: str
    content_hash: str
    label: PrivatizationLabel = _INTERNAL

    def __post_init__(self) -> None:
        if self.content_hash != text_hash(self.text):
            raise ValueError(f"block {self.layer.name}:{self.key} has a wrong content hash")

    @classmethod
    def of(cls, layer: Layer, key: str, text: str, label: PrivatizationLabel = _INTERNAL) -> Block:
        return cls(layer=layer, key=key, text=text, content_hash=text_hash(text), label=label)

    @property
    def chars(self) -> int:
        return len(self.text)

    def payload(self) -> FloorBlock:
        """The `floor/block` event that records this block once."""
        return FloorBlock(
            hash=self.content_hash,
            layer=int(self.layer),
            key=self.key,
            text=self.text,
            label=self.label,
        )


def order_floor(blocks: Iterable[Block]) -> tuple[Block, ...]:
    """Blocks by layer, keeping each layer's given order; a repeated (layer, key) is refused."""
    ordered = tuple(sorted(blocks, key=lambda b: int(b.layer)))
    seen: set[tuple[Layer, str]] = set()
    for block in ordered:
        address = (block.layer, block.key)
        if address in seen:
            raise ValueError(f"two floor blocks share {block.layer.name}:{block.key}")
        seen.add(address)
    return ordered


def prefix_digest(blocks: Sequence[Block]) -> str:
    """SHA-256 over the ordered (layer, key, content_hash) of the floor: changes with any block."""
    entries = [[int(b.layer), b.key, b.content_hash] for b in blocks]
    encoded = json.dumps(entries, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def system_text(blocks: Sequence[Block]) -> str:
    """The floor as the request's system field."""
    return FLOOR_SEPARATOR.join(b.text for b in blocks)


def environment_block(
    *, cwd: str, platform: str, model: str, tools: Iterable[str], grant_epoch: int
) -> Block:
    """Layer 3: what the model runs in. Tool names are sorted so the block is byte-stable."""
    tool_list = ", ".join(sorted(set(tools))) or "(none)"
    text = (
        "Environment:\n"
        f"- working directory: {cwd}\n"
        f"- platform: {platform}\n"
        f"- model: {model}\n"
        f"- tools: {tool_list}\n"
        f"- grant epoch: {grant_epoch}"
    )
    return Block.of(Layer.environment, "environment", text)


def karma_blocks(pins: Sequence[tuple[str, str]]) -> tuple[Block, ...]:
    """Layer 4: one block per pinned note, so a new pin logs only itself."""
    return tuple(
        Block.of(Layer.karma, f"pin:{pin_id}", f"Pinned note: {text}") for pin_id, text in pins
    )


def pin_note(pin_id: str, text: str) -> str:
    """A new pin as it enters the conversation's tail, before it joins the floor."""
    return f"Pinned note ({pin_id}), to keep in mind for the rest of the session: {text}"


def unpin_note(pin_id: str) -> str:
    """A withdrawn pin as the conversation's tail says it, before the floor drops it."""
    return f"The pinned note {pin_id} is withdrawn: disregard it from now on."


@dataclass(slots=True)
class PinBoard:
    """The pinned notes, in the order they were added, kept from `pin/add` and `pin/remove` events."""

    _pins: dict[str, str] = field(default_factory=dict)

    def apply(self, payload: Payload) -> None:
        """Follow one event; other event types are ignored (the assembler and the timeline pass
        it only pin events)."""
        match payload:  # exact: a payload class is never subclassed (see `Payload`)
            case PinAdd():
                self._pins.pop(payload.pin_id, None)
                self._pins[payload.pin_id] = payload.text
            case PinRemove():
                self._pins.pop(payload.pin_id, None)

    @property
    def pins(self) -> tuple[tuple[str, str], ...]:
        return tuple(self._pins.items())


@dataclass(frozen=True, slots=True, kw_only=True)
class CodexFile:
    """One instruction file as read at turn start; `size` is the whole file's size in bytes.

    `refused` says why a file that exists was not read (it leads outside the workspace, or it is
    no regular file); the block then says so instead of holding text from elsewhere.
    """

    name: str
    data: bytes
    size: int
    refused: str = ""


def _read_bounded(root: Path, names: Sequence[str], max_bytes: int) -> list[CodexFile]:
    found: list[CodexFile] = []
    for name in names:
        # The confinement of `read_file`: the codex reaches the model and the log like a read.
        try:
            path = resolve_in_workspace(root, name)
            with open_regular(path, name) as handle:
                data = handle.read(max_bytes + 1)
                size = os.fstat(handle.fileno()).st_size
        except (FileNotFoundError, NotADirectoryError):
            continue  # spec: a missing instruction file makes no block
        except (WorkspaceEscapeError, NotRegularFileError) as refused:
            found.append(CodexFile(name=name, data=b"", size=0, refused=str(refused)))
            continue
        found.append(CodexFile(name=name, data=data, size=max(size, len(data))))
    return found


def codex_block(
    file: CodexFile, max_bytes: int, secret_patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS
) -> Block:
    """Layer 2: the file verbatim up to `max_bytes`; a truncation is declared inside the block."""
    label = secret_label(file.name, secret_patterns)
    if file.refused:
        return Block.of(Layer.codex, file.name, f"[{file.name} is not read: {file.refused}]", label)
    data = file.data
    truncated = len(data) > max_bytes
    if truncated:
        cut = max_bytes
        while cut > 0 and (data[cut] & 0xC0) == 0x80:  # never split a UTF-8 character
            cut -= 1
        data = data[:cut]
    body = data.decode("utf-8", errors="replace")
    text = f"Instructions from {file.name}:\n{body}"
    if truncated:
        text += (
            f"\n[truncated: {file.name} is {file.size:,} bytes; "
            f"only the first {len(data):,} are shown]"
        )
    return Block.of(Layer.codex, file.name, text, label)


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorBuilder:
    """Builds layers 1, 2 and 4 from configuration; layer 3 comes from `EnvironmentSnapshots`."""

    system_prompt: str
    workspace_root: Path
    instruction_files: tuple[str, ...] = DEFAULT_INSTRUCTION_FILES
    instruction_max_bytes: int = DEFAULT_INSTRUCTION_MAX_BYTES
    secret_patterns: tuple[str, ...] = DEFAULT_SECRET_PATTERNS

    def __post_init__(self) -> None:
        if self.instruction_max_bytes <= 0:
            raise ValueError(
                f"instruction_max_bytes must be positive, got {self.instruction_max_bytes}"
            )
        for name in self.instruction_files:
            relative = PurePosixPath(name)
            if relative.is_absolute() or ".." in relative.parts or not relative.parts:
                raise ValueError(
                    f"instruction file {name!r} must be a path inside the workspace root"
                )

    def identity(self) -> tuple[Block, ...]:
        """Layer 1: the system prompt; an empty prompt makes no block."""
        if not self.system_prompt:
            return ()
        return (Block.of(Layer.identity, "system_prompt", self.system_prompt),)

    async def codex(self) -> tuple[Block, ...]:
        """Layer 2, read at each turn start off the event loop, in the configured order."""
        files = await asyncio.to_thread(
            _read_bounded,
            self.workspace_root,
            self.instruction_files,
            self.instruction_max_bytes,
        )
        return tuple(
            codex_block(f, self.instruction_max_bytes, self.secret_patterns) for f in files
        )

    async def build(
        self, *, environment: Block | None, pins: Sequence[tuple[str, str]] = ()
    ) -> tuple[Block, ...]:
        """The whole floor for one turn: identity, codex (read now), environment, karma."""
        codex = await self.codex()
        env = () if environment is None else (environment,)
        return order_floor((*self.identity(), *codex, *env, *karma_blocks(pins)))


@dataclass(slots=True)
class FloorLog:
    """Remembers which blocks were logged so each distinct block becomes one `floor/block` event."""

    _logged: set[tuple[int, str, str]] = field(default_factory=set)

    def note(self, payload: FloorBlock) -> None:
        """Record a block already in the log (on resume)."""
        self._logged.add((payload.layer, payload.key, payload.hash))

    def new_blocks(self, blocks: Iterable[Block]) -> list[FloorBlock]:
        """The payloads to append for blocks not yet logged; marks them logged."""
        fresh: list[FloorBlock] = []
        for block in blocks:
            address = (int(block.layer), block.key, block.content_hash)
            if address not in self._logged:
                self._logged.add(address)
                fresh.append(block.payload())
        return fresh
