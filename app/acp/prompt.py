"""A `session/prompt` in engine terms: its content blocks as the prompt text and attachments, and
a turn's end as an ACP stop reason (the mapping in docs/ARCHITECTURE.md, "The ACP bridge")."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never
from urllib.parse import urlsplit
from urllib.request import url2pathname

from acp.exceptions import RequestError
from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    StopReason,
    TextContentBlock,
    TextResourceContents,
)

from app.acp import rpc
from app.attachment_files import read_attachment
from engine.events import Attachment, Event, StepEnd, TurnEndReason, Usage

log = logging.getLogger(__name__)

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


@dataclass(frozen=True, slots=True)
class Prompt:
    text: str
    attachments: tuple[Attachment, ...]


def prompt_of(blocks: Sequence[PromptBlock]) -> Prompt:
    """Text blocks joined in order; resource links and embedded resources as attachments (a
    link carries its uri and no text until `read_linked_files` reads it, an embedded text
    resource its text). Images and audio were not offered in `initialize`, so they are invalid
    params naming the block."""
    texts: list[str] = []
    attachments: list[Attachment] = []
    for index, block in enumerate(blocks):
        match block:
            case TextContentBlock():
                texts.append(block.text)
            case ResourceContentBlock():
                attachments.append(
                    Attachment(name=block.name, uri=block.uri, mime_type=block.mime_type or "")
                )
            case EmbeddedResourceContentBlock():
                attachments.append(_embedded(index, block.resource))
            case ImageContentBlock() | AudioContentBlock():
                raise RequestError(
                    rpc.INVALID_PARAMS,
                    f"Invalid params: prompt.{index}: {block.type} blocks are not supported "
                    "(promptCapabilities)",
                )
            case _:
                assert_never(block)
    if not texts and not attachments:
        raise RequestError(rpc.INVALID_PARAMS, "Invalid params: prompt: no text and no resource")
    return Prompt("\n".join(texts), tuple(attachments))


def read_linked_files(prompt: Prompt, workspace: Path) -> Prompt:
    """The prompt with each link to a text file of the workspace read into its attachment, as
    the console reads an `@path` (ACP's baseline: an agent reads what a `resource_link` names).
    A link it cannot read (another scheme, outside the workspace, missing, binary) stays a link:
    the model is told it was not included. Blocking: run it in a thread."""
    attachments = tuple(
        _read_link(attachment, workspace) if not attachment.text else attachment
        for attachment in prompt.attachments
    )
    return Prompt(prompt.text, attachments)


def _read_link(link: Attachment, workspace: Path) -> Attachment:
    parts = urlsplit(link.uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return link
    path = url2pathname(parts.path)
    try:
        text = read_attachment(workspace, path).text
    except (OSError, ValueError) as exc:
        log.info("resource link %s not attached: %s", link.uri, exc)
        return link
    # the link's own name and uri stay, as the client sent them
    return link.model_copy(update={"text": text, "mime_type": link.mime_type or "text/plain"})


def _embedded(index: int, resource: TextResourceContents | BlobResourceContents) -> Attachment:
    name = resource.uri.rstrip("/").rsplit("/", 1)[-1] or resource.uri
    if isinstance(resource, BlobResourceContents):
        raise RequestError(
            rpc.INVALID_PARAMS,
            f"Invalid params: prompt.{index}.resource: binary (blob) resources are not supported",
        )
    return Attachment(
        name=name,
        uri=resource.uri,
        mime_type=resource.mime_type or "text/plain",
        text=resource.text,
    )


STOP_REASONS: dict[TurnEndReason, StopReason] = {
    "completed": "end_turn",
    "cancelled": "cancelled",
    "interrupted": "cancelled",
    "disposed": "cancelled",
    "max_steps": "max_turn_requests",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
    "egress": "refusal",
}
"""A turn's end reason as an ACP stop reason; `error` and `budget` are error answers instead."""


USAGE_META = "usage"
"""The `_meta` key of a prompt answer's token usage: ACP's `PromptResponse.usage` is in its
unstable schema only, so the same object travels under `_meta` until it is stable."""


def turn_usage(events: Iterable[Event]) -> dict[str, int] | None:
    """The tokens the provider reported for the steps among `events` (a prompt's turn), as ACP's
    `Usage` writes them: its parts do not overlap (`inputTokens` is the uncached input, beside
    the cache reads and writes) and `totalTokens` adds them all; None when no step reported
    any."""
    total = Usage()
    for event in events:
        data = event.data
        if type(data) is StepEnd:  # by exact class (see `Payload`)
            total += data.usage
    if not total.prompt_tokens and not total.output_tokens:
        return None
    usage = {
        "totalTokens": total.prompt_tokens + total.output_tokens,
        "inputTokens": total.input_tokens,
        "outputTokens": total.output_tokens,
    }
    if total.cache_read_tokens:
        usage["cachedReadTokens"] = total.cache_read_tokens
    if total.cache_write_tokens:
        usage["cachedWriteTokens"] = total.cache_write_tokens
    return usage
