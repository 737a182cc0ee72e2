"""The provider-native, append-only working Context, with each item's provenance beside it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

from engine.context.provenance import Provenance
from engine.gateway.base import Codec, GatewayType, NativeContent
from engine.gateway.codecs import codec_for
from engine.message import Message, ToolCall, ToolResult

OwnerStamp = Callable[[Provenance], Provenance]
"""Called on every emplaced item's provenance; CoopContext uses it to stamp the owner."""


class Context(Sequence[NativeContent]):
    """One native item per emplaced message, per assistant message with its tool calls, and per
    tool result, so an index means the same in every format and a rebuilt Context matches.

    Items and provenances are kept in two aligned lists; every mutation touches both.
    """

    _gateway_type: GatewayType
    _codec: Codec
    _items: list[NativeContent]
    _provenances: list[Provenance]
    _stamp: OwnerStamp | None
    _cuts: int

    def __init__(self, gateway_type: GatewayType, *, codec: Codec | None = None) -> None:
        self._gateway_type = gateway_type
        self._codec = codec if codec is not None else codec_for(gateway_type)
        self._items = []
        self._provenances = []
        self._stamp = None
        self._cuts = 0

    @classmethod
    def restored(
        cls,
        gateway_type: GatewayType,
        items: Sequence[NativeContent],
        provenances: Sequence[Provenance],
        *,
        codec: Codec | None = None,
    ) -> Context:
        """A Context holding these aligned items and provenances (a replay checkpoint, a copy).

        Items are shared, not copied: a Context never changes an item in place.
        """
        if len(items) != len(provenances):
            raise ValueError(f"{len(items)} items but {len(provenances)} provenances")
        context = cls(gateway_type, codec=codec)
        context._items = list(items)
        context._provenances = list(provenances)
        return context

    def copy(self) -> Context:
        """An independent Context with the same items and provenances, and no owner stamp."""
        return Context.restored(
            self._gateway_type, self._items, self._provenances, codec=self._codec
        )

    @property
    def gateway_type(self) -> GatewayType:
        return self._gateway_type

    @property
    def codec(self) -> Codec:
        return self._codec

    def set_owner_stamp(self, stamp: OwnerStamp | None) -> None:
        """Install the hook that stamps ownership on emplaced items (one CoopContext per Context)."""
        self._stamp = stamp

    # --- appending ---------------------------------------------------------------------------

    def emplace_message(self, message: Message, provenance: Provenance) -> int:
        """Encode a generic message and append it; returns its index."""
        return self._emplace(self._codec.encode_message(message), provenance)

    def emplace_assistant(
        self,
        content: str,
        tool_calls: Sequence[ToolCall],
        provenance: Provenance,
        *,
        reasoning: str = "",
        provider_state: Mapping[str, Any] | None = None,
    ) -> int:
        """Append one assistant item carrying its tool calls and opaque provider state."""
        item = self._codec.encode_assistant(
            content, tool_calls, reasoning=reasoning, provider_state=provider_state
        )
        return self._emplace(item, provenance)

    def emplace_tool_result(self, result: ToolResult, name: str, provenance: Provenance) -> int:
        """Append one tool result; `name` is the called tool's (Gemini needs it)."""
        return self._emplace(self._codec.encode_tool_result(result, name=name), provenance)

    def append_native(self, item: NativeContent, provenance: Provenance) -> int:
        """Append an already-native item with its provenance as is (carry-over; no stamping)."""
        self._items.append(item)
        self._provenances.append(provenance)
        return len(self._items) - 1

    def _emplace(self, item: NativeContent, provenance: Provenance) -> int:
        if self._stamp is not None:
            provenance = self._stamp(provenance)
        return self.append_native(item, provenance)

    # --- cutting ------------------------------------------------------------------------------

    def detach_tail(self, index: int) -> list[tuple[NativeContent, Provenance]]:
        """Cut the items from `index` on and return them with their provenances, in order.

        `index` follows Python's rules for a slice start (negative counts from the end; past the
        end detaches nothing).
        """
        start, _, _ = slice(index, None).indices(len(self._items))
        tail = list(zip(self._items[start:], self._provenances[start:], strict=True))
        if tail:
            del self._items[start:]
            del self._provenances[start:]
            self._cuts += 1
        return tail

    # --- reading ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> NativeContent: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[NativeContent, ...]: ...

    def __getitem__(self, index: int | slice) -> NativeContent | tuple[NativeContent, ...]:
        if isinstance(index, slice):
            return tuple(self._items[index])
        return self._items[index]

    def __iter__(self) -> Iterator[NativeContent]:
        return iter(self._items)

    @property
    def cuts(self) -> int:
        """How many times items were detached or replaced: a reader that kept a slice of the items
        knows it is still what the Context holds while this is unchanged (appends change nothing
        before the tail)."""
        return self._cuts

    @property
    def item_list(self) -> list[NativeContent]:
        """The items list itself, for CoopContext's pass, which slices an observe() snapshot for
        every Area it visits without a call through `__getitem__` each; never mutated through it."""
        return self._items

    def provenance(self, index: int) -> Provenance:
        return self._provenances[index]

    @property
    def provenances(self) -> tuple[Provenance, ...]:
        """Aligned with the items: `provenances[i]` is where `self[i]` came from."""
        return tuple(self._provenances)

    @property
    def provenance_view(self) -> Sequence[Provenance]:
        """A read-only live view of the provenances, for readers that must not copy each step."""
        return _ProvenanceView(self._provenances)

    def rebind(
        self, gateway_type: GatewayType, entries: Sequence[tuple[NativeContent, Provenance]]
    ) -> None:
        """Switch to another provider's format: the same positions and provenance, new items.

        `entries` come from rebuilding the same log in the new format (a model change), so every
        index keeps its meaning and the Areas' effect ranges stay valid.
        """
        if len(entries) != len(self._items):
            raise ValueError(
                f"rebinding needs {len(self._items)} items, got {len(entries)}: the log and the "
                "Context disagree"
            )
        self._gateway_type = gateway_type
        self._codec = codec_for(gateway_type)
        self._items = [item for item, _ in entries]
        self._provenances = [provenance for _, provenance in entries]
        self._cuts += 1

    def provenances_from(self, index: int) -> tuple[Provenance, ...]:
        """The provenances of the tail from `index` (costs the tail, not the whole Context)."""
        return tuple(self._provenances[index:])

    def entries(self) -> list[tuple[NativeContent, Provenance]]:
        """Items with their provenances, in order (a shallow copy)."""
        return list(zip(self._items, self._provenances, strict=True))

    def messages(self) -> list[Message]:
        """The items decoded to generic messages (display, tests); sources come from provenance."""
        decoded: list[Message] = []
        for item, provenance in zip(self._items, self._provenances, strict=True):
            message = self._codec.decode(item)
            if message.source is None and provenance.source is not None:
                message = Message(
                    message.role,
                    message.content,
                    provenance.source,
                    message.tool_calls,
                    message.tool_call_id,
                    message.is_error,
                )
            decoded.append(message)
        return decoded

    def serialize(self) -> list[dict[str, Any]]:
        """The provider's request list for the whole Context (merging where it requires)."""
        return self._codec.serialize(self._items)

    def __repr__(self) -> str:
        return f"Context({self._gateway_type.value}, {len(self._items)} items)"


class _ProvenanceView(Sequence[Provenance]):
    __slots__ = ("_items",)

    def __init__(self, items: list[Provenance]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Provenance: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Provenance, ...]: ...

    def __getitem__(self, index: int | slice) -> Provenance | tuple[Provenance, ...]:
        if isinstance(index, slice):
            return tuple(self._items[index])
        return self._items[index]
