"""The embedded model: plays scripted replies, or answers deterministically, with no network.

Tests and demos need a model whose every answer is known in advance and which shows exactly what
it was given. `ScriptedGateway` plays its `Reply`s in order (from Python or a JSON/TOML script
file), records every request, and when the script runs out (or there is none) falls back to the
default behaviour: it calls `read_file`/`list_files` when the prompt asks to read or list a
workspace path, summarizes the tool results that come back, and otherwise streams a short markdown
reply describing the request. With `strict=True` a spent script raises instead.

Every stream ends with one `UsageDelta` (characters / 4, rounded up) and one `FinishDelta`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.counts import counted
from engine.errors import TrellisError
from engine.events import Finish, Usage
from engine.gateway.base import (
    Codec,
    FinishDelta,
    GatewayError,
    GatewayType,
    ModelRequest,
    ProviderStateDelta,
    ReasoningDelta,
    StreamDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from engine.gateway.codecs import codec_for
from engine.message import Message, Role, ToolCall

ARGUMENT_FRAGMENT_CHARS = 16
"""Tool-call arguments are streamed in fragments this long, as real providers split them."""

LISTING_PREVIEW_ENTRIES = 10
"""How many entries of a listing the default summary names."""


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted model answer.

    `error` makes the stream raise `GatewayError(error, transient=transient, status=status)` after
    the text and reasoning (if any) were streamed; `finish` and `usage` override the computed ones.
    A tool call with an empty id gets `call_<n>`, numbered on from the calls the gateway generated
    and those in the request's conversation.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[ToolCall] = ()
    chunk_delay: float = 0.0
    error: str | None = None
    transient: bool = False
    status: int | None = None
    finish: Finish | None = None
    usage: Usage | None = None
    provider_state: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.chunk_delay < 0:
            raise ValueError(f"chunk_delay must be >= 0, got {self.chunk_delay}")


class ScriptError(TrellisError, ValueError):
    """A script file that cannot be played; the message names the file and what is wrong."""


class ScriptedGateway:
    """Plays `replies` in order, then answers by the default behaviour (or raises if `strict`)."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        record_requests: bool = True,
        strict: bool = False,
    ) -> None:
        self._replies: list[Reply] = list(replies)
        self._record = record_requests
        self._strict = strict
        self._codec = codec_for(GatewayType.scripted)
        self._call_ids = 0
        self.played = 0
        self.requests: list[ModelRequest] = []

    @property
    def gateway_type(self) -> GatewayType:
        return GatewayType.scripted

    @property
    def codec(self) -> Codec:
        return self._codec

    @property
    def remaining(self) -> int:
        """Scripted replies not played yet."""
        return len(self._replies)

    def push(self, *replies: Reply) -> None:
        """Append replies to the script (a test can feed the model between turns)."""
        self._replies.extend(replies)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta]:
        if self._record:
            self.requests.append(request)
        messages = [self._codec.decode(item) for item in request.items]
        if self._replies:
            reply = self._replies.pop(0)
            self.played += 1
        elif self._strict:
            raise GatewayError(
                f"scripted: the script is spent ({self.played} replies played) and strict is set"
            )
        else:
            reply = default_reply(request, messages)
        async for delta in self._play(reply, request, messages):
            yield delta

    async def _play(
        self, reply: Reply, request: ModelRequest, messages: Sequence[Message]
    ) -> AsyncIterator[StreamDelta]:
        chunks: list[StreamDelta] = [ReasoningDelta(c) for c in _chunks(reply.reasoning)]
        chunks += [TextDelta(c) for c in _chunks(reply.text)]
        if reply.error is None:
            # Generated ids continue after the calls already in the conversation, so a gateway
            # opened on a resumed session does not reuse them.
            self._call_ids = max(self._call_ids, sum(len(m.tool_calls) for m in messages))
            for index, call in enumerate(reply.tool_calls):
                chunks.extend(self._call_deltas(index, call))
        for number, chunk in enumerate(chunks):
            if number:
                await asyncio.sleep(reply.chunk_delay)
            yield chunk
        if reply.error is not None:
            raise GatewayError(reply.error, transient=reply.transient, status=reply.status)
        if reply.provider_state:
            yield ProviderStateDelta(dict(reply.provider_state))
        yield UsageDelta(reply.usage or _usage(request, messages, reply))
        yield FinishDelta(reply.finish or ("tool_calls" if reply.tool_calls else "stop"))

    def _call_deltas(self, index: int, call: ToolCall) -> list[ToolCallDelta]:
        call_id = call.id
        if not call_id:
            self._call_ids += 1
            call_id = f"call_{self._call_ids}"
        arguments = json.dumps(call.arguments, ensure_ascii=False)
        deltas = [ToolCallDelta(index=index, id=call_id, name=call.name)]
        deltas += [
            ToolCallDelta(index=index, arguments=arguments[i : i + ARGUMENT_FRAGMENT_CHARS])
            for i in range(0, len(arguments), ARGUMENT_FRAGMENT_CHARS)
        ]
        return deltas

    async def aclose(self) -> None:
        return None


def _chunks(text: str) -> list[str]:
    """Words with their trailing whitespace, so joining the chunks gives the text back exactly."""
    return re.findall(r"\s+|\S+\s*", text) if text else []


def _tokens(chars: int) -> int:
    return -(-chars // 4)


def _usage(request: ModelRequest, messages: Sequence[Message], reply: Reply) -> Usage:
    given = len(request.system) + sum(
        len(m.content) + sum(len(json.dumps(c.arguments)) for c in m.tool_calls) for m in messages
    )
    produced = len(reply.text) + len(reply.reasoning)
    produced += sum(len(json.dumps(c.arguments)) for c in reply.tool_calls)
    return Usage(input_tokens=_tokens(given), output_tokens=_tokens(produced))


# --- the default behaviour ------------------------------------------------------------------------

_READ_PHRASES = re.compile(
    r"\b(?:read|show|open|cat|display|print|what'?s\s+in|what\s+is\s+in|contents?\s+of)\b",
    re.IGNORECASE,
)
# "list" alone is too common a word ("make a list of ideas"): it must lead the prompt or name
# what is listed.
_LIST_PHRASES = re.compile(
    r"^\W*(?:please\s+)?(?:list|ls)\b|\b(?:list|ls)(?=\s+(?:the\s+|all\s+)?(?:files|entries|directory|dir|folder|contents)\b)",
    re.IGNORECASE,
)
_FILLER = frozenset(
    {"me", "the", "a", "all", "file", "files", "contents", "content", "entries", "everything"}
    | {"of", "in", "inside", "under", "at", "please", "directory", "dir", "folder"}
)
_WORKSPACE = frozenset({"workspace", "root", "project", "repo", "repository", "here"})
_BARE_FILE_NAMES = frozenset({"Makefile", "Dockerfile", "LICENSE", "README", "Justfile"})
_WORD = re.compile(r"""[`'"]?([\w./~-]+)[`'"]?""")


def default_reply(request: ModelRequest, messages: Sequence[Message]) -> Reply:
    """The deterministic answer to a request: a tool call, a tool summary or a markdown echo."""
    tools = {tool.name for tool in request.tools}
    last_prompt = max(
        (i for i, m in enumerate(messages) if _is_direct_prompt(m)),
        default=None,
    )
    if last_prompt is None:
        return Reply(text=_describe(request, messages, prompt=None))
    results = [m for m in messages[last_prompt + 1 :] if m.role is Role.tool]
    if results:
        return Reply(text=_summarize(messages[last_prompt + 1 :]))
    prompt = messages[last_prompt].content
    intent = _intent(prompt)
    if intent is not None:
        tool, path = intent
        if tool in tools:
            verb = "Reading" if tool == "read_file" else "Listing"
            return Reply(
                text=f"{verb} `{path}`.",
                tool_calls=[ToolCall("", tool, {"path": path})],
            )
    return Reply(text=_describe(request, messages, prompt=prompt))


def _is_direct_prompt(message: Message) -> bool:
    return message.role is Role.user and (message.source is None or message.source.is_user)


def _intent(prompt: str) -> tuple[str, str] | None:
    """(`read_file` | `list_files`, path) for the first read or list phrase that names a path."""
    found: list[tuple[int, str, str]] = []
    read = _READ_PHRASES.search(prompt)
    if read is not None:
        path = _path_after(prompt[read.end() :], listing=False)
        if path is not None:
            tool = "list_files" if path == "." or path.endswith("/") else "read_file"
            found.append((read.start(), tool, path))
    listing = _LIST_PHRASES.search(prompt)
    if listing is not None:
        path = _path_after(prompt[listing.end() :], listing=True)
        found.append((listing.start(), "list_files", path or "."))
    if not found:
        return None
    _, tool, path = min(found)
    return tool, path


def _path_after(text: str, *, listing: bool) -> str | None:
    """The first path-like word of `text` after filler words; a listing accepts any plain name."""
    for match in _WORD.finditer(text):
        word = match.group(1).rstrip(".,;:!?") or match.group(1)
        if word.lower() in _FILLER:
            continue
        if word.lower() in _WORKSPACE:
            return "." if listing else None
        quoted = match.group(0) != match.group(1)
        if quoted or "." in word or "/" in word or word in _BARE_FILE_NAMES or listing:
            return word
        return None
    return None


def _summarize(after_prompt: Sequence[Message]) -> str:
    """A summary of the latest batch of tool results, naming what each call did."""
    calls = {c.id: c for m in after_prompt if m.role is Role.assistant for c in m.tool_calls}
    last_batch: list[Message] = []
    for message in after_prompt:
        if message.role is Role.assistant and message.tool_calls:
            last_batch = []
        elif message.role is Role.tool:
            last_batch.append(message)
    lines = ["## Result", ""]
    for result in last_batch:
        call = calls.get(result.tool_call_id)
        lines.append(_summary_line(call, result))
    return "\n".join(lines).rstrip() + "\n"


def _summary_line(call: ToolCall | None, result: Message) -> str:
    name = call.name if call is not None else "a tool"
    path = str(call.arguments.get("path", ".")) if call is not None else ""
    content = result.content
    first = content.strip().splitlines()[0] if content.strip() else ""
    if result.is_error:
        return f"`{name}` failed: {first or 'no message'}\n"
    line_count = len(content.splitlines())
    if name == "read_file":
        preview = f"\n\n> {first}" if first else ""
        return f"I read `{path}` ({counted(line_count, 'line')}).{preview}\n"
    if name == "list_files":
        entries = content.splitlines()
        shown = ", ".join(f"`{e}`" for e in entries[:LISTING_PREVIEW_ENTRIES])
        more = (
            f" and {len(entries) - LISTING_PREVIEW_ENTRIES} more"
            if len(entries) > LISTING_PREVIEW_ENTRIES
            else ""
        )
        return f"`{path}` holds {counted(len(entries), 'entry', 'entries')}: {shown}{more}.\n"
    return f"`{name}` returned {counted(line_count, 'line')}.\n"


def _describe(request: ModelRequest, messages: Sequence[Message], *, prompt: str | None) -> str:
    """The markdown echo: the prompt quoted, and what came with it, counted by source."""
    lines = ["## Scripted reply", ""]
    if prompt is None:
        lines.append("There is no prompt from the user yet.")
    else:
        lines.append("You said:")
        lines.append("")
        lines.extend(f"> {line}".rstrip() for line in (prompt.splitlines() or [""]))
    sources: Counter[str] = Counter()
    for message in messages:
        match message.role:
            case Role.user | Role.system:
                sources[str(message.source) if message.source else message.role.value] += 1
            case Role.assistant:
                sources["assistant"] += 1
            case Role.tool:
                sources["tool result"] += 1
    by_source = ", ".join(f"{n} from `{s}`" for s, n in sorted(sources.items()))
    lines.append("")
    lines.append(
        f"I was given {counted(len(messages), 'message')}"
        + (f" ({by_source})" if by_source else "")
        + f", a system prompt of {counted(len(request.system), 'character')}"
        + f" and {counted(len(request.tools), 'tool')}."
    )
    return "\n".join(lines) + "\n"
