"""Prompt admission: a waterfall of listeners that may rewrite, enrich or block a prompt.

It runs before any turn exists (spec: a blocked prompt opens no turn and appends nothing). Each
listener gets the submission and `next`, the rest of the chain; one that delegates with `next()` keeps
what downstream decided unless it deliberately returns something else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from engine.events import Attachment
from engine.message import AdditionalContext
from engine.os_text import storable_os_text


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptSubmission:
    """What the user sent, as the chain sees it."""

    content: str
    attachments: tuple[Attachment, ...] = ()

    def __post_init__(self) -> None:
        # a prompt with undecodable OS bytes keeps the user's words, escaped (engine.os_text)
        object.__setattr__(self, "content", storable_os_text(self.content))


@dataclass(frozen=True, slots=True)
class Allow:
    """Admit the prompt, possibly rewritten, with contexts that join the turn after it."""

    content: str
    additional_contexts: tuple[AdditionalContext, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.content, str):
            raise TypeError(f"Allow.content must be str, not {type(self.content).__name__}")
        object.__setattr__(self, "content", storable_os_text(self.content))
        for context in self.additional_contexts:
            if not isinstance(context, AdditionalContext):
                raise TypeError("Allow.additional_contexts must hold AdditionalContext values")


@dataclass(frozen=True, slots=True)
class Reject:
    """Refuse the prompt; nothing is appended and no turn opens."""

    reason: str


PromptDecision = Allow | Reject
Next = Callable[[], Awaitable[PromptDecision]]
PromptListener = Callable[[PromptSubmission, Next], Awaitable[PromptDecision]]


async def run_admission(
    listeners: Sequence[PromptListener], submission: PromptSubmission
) -> PromptDecision:
    """Run the chain in registration order; the end of the chain allows the prompt unchanged."""

    async def call(index: int) -> PromptDecision:
        if index == len(listeners):
            return Allow(submission.content)
        decision = await listeners[index](submission, lambda: call(index + 1))
        if not isinstance(decision, Allow | Reject):
            raise TypeError(
                f"prompt listener {listeners[index]!r} returned {decision!r}, not Allow or Reject"
            )
        return decision

    return await call(0)
