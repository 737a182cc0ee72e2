"""How much of the model's window a request used, in tokens: as the provider reported it, else
estimated from characters.

The one place the figure is computed, so the console's status line, `/context` and ACP's
`usage_update` say the same number for the same step. The estimate counts the orchestrator's
characters at the rate the provider last reported for this session (`TokenRate`), else at
`CHARS_PER_TOKEN` (context-orchestration: three characters a token, conservative): a cancelled or
failed step reports no tokens, and estimating it at a fixed rate between two reported steps made
the figure jump up and back down.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from engine.context.budget import CHARS_PER_TOKEN
from engine.events import AssistantMessage, Cost, Figures, Payload, StepEnd, StepStart, Usage
from engine.money import add_cost


def reported(usage: Usage) -> bool:
    """Whether the provider counted the step's tokens (a cancelled or failed step has none)."""
    return usage.prompt_tokens > 0 or usage.output_tokens > 0


def estimated_tokens(chars: int) -> int:
    """Tokens for `chars` characters at `CHARS_PER_TOKEN`, rounded up (a non-empty text is never
    0 tokens)."""
    return -(-chars // CHARS_PER_TOKEN)


def reply_chars(message: AssistantMessage) -> int:
    """What a reply adds to the context, in characters: its text, its reasoning and the
    arguments of its tool calls."""
    chars = len(message.content) + len(message.reasoning)
    for call in message.tool_calls:
        chars += len(json.dumps(call.arguments))
    return chars


@dataclass(frozen=True, slots=True)
class TokenRate:
    """Tokens per character as the bound model last counted them: the input tokens it reported
    for a request of `chars` characters (cached or not: the cache changes the price, not the
    count)."""

    tokens: int
    chars: int

    def tokens_for(self, chars: int) -> int:
        """`chars` characters in tokens at this rate, rounded up."""
        return -(-chars * self.tokens // self.chars)

    @classmethod
    def of(cls, figures: Figures, usage: Usage) -> TokenRate | None:
        """The rate a step's report gives; None when it reported no input or had no characters."""
        if usage.prompt_tokens <= 0 or figures.chars <= 0:
            return None
        return cls(usage.prompt_tokens, figures.chars)


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextUsage:
    """One step's tokens against the model's window."""

    prompt_tokens: int
    """The whole request, cached or not (`Usage.prompt_tokens`): what it took of the window."""
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    """The parts of `prompt_tokens` the provider read from or wrote to its prompt cache (0 for
    an estimate)."""
    estimated: bool
    """No provider report: the tokens are `estimated_tokens` of the characters."""
    window: int | None
    """The bound model's window in tokens; None when its entry declares none."""
    cap_tokens: int
    """The request's character cap in tokens (`cap / CHARS_PER_TOKEN`)."""

    @property
    def used(self) -> int:
        """Tokens in the context after the step: the request and the reply."""
        return self.prompt_tokens + self.output_tokens

    @property
    def input_tokens(self) -> int:
        """The part of the request neither read from nor written to a prompt cache."""
        return self.prompt_tokens - self.cache_read_tokens - self.cache_write_tokens

    @property
    def size(self) -> int:
        """What `used` is measured against: the model's window, else the cap in tokens."""
        return self.window if self.window is not None else self.cap_tokens


def context_usage(
    figures: Figures,
    usage: Usage | None = None,
    *,
    output_chars: int = 0,
    rate: TokenRate | None = None,
) -> ContextUsage:
    """The step whose request had `figures`: the provider's `usage` when it reported any tokens,
    else estimated from the request's characters and the reply's (`output_chars`), at `rate`
    when the session has one."""
    if usage is not None and reported(usage):
        return ContextUsage(
            prompt_tokens=usage.prompt_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            estimated=False,
            window=figures.window,
            cap_tokens=figures.cap // CHARS_PER_TOKEN,
        )
    if rate is not None:
        prompt_tokens, output_tokens = rate.tokens_for(figures.chars), rate.tokens_for(output_chars)
    else:
        prompt_tokens, output_tokens = (
            estimated_tokens(figures.chars),
            estimated_tokens(output_chars),
        )
    return ContextUsage(
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        estimated=True,
        window=figures.window,
        cap_tokens=figures.cap // CHARS_PER_TOKEN,
    )


@dataclass(slots=True)
class UsageTally:
    """A session's token figures, folded from its events in log order: the last step's usage
    and cost, and the session's totals (what every step used, each as `context_usage` gives it,
    and what they cost)."""

    figures: Figures | None = None
    """The last request's figures; None before the first."""
    usage: Usage | None = None
    """The last step's reported usage, once its `step/end` came."""
    output_chars: int = 0
    session_tokens: int = 0
    session_estimated: bool = False
    """Some step of the total reported no tokens: its share is estimated."""
    rate: TokenRate | None = None
    """The last reported rate, which the estimates use."""
    cost: Cost | None = None
    """The last step's cost, once its `step/end` came with one."""
    session_cost: dict[str, float] = field(default_factory=dict)
    """What the session's steps cost, per currency."""

    def take(self, data: Payload) -> bool:
        """Fold one event's payload; True when the figures changed."""
        # by exact class (see `Payload`)
        if type(data) is StepStart:
            self.figures, self.usage, self.output_chars = data.figures, None, 0
            self.cost = None
            return True
        if type(data) is AssistantMessage:
            self.output_chars += reply_chars(data)
            return False
        if type(data) is StepEnd and self.figures is not None:
            self.usage, self.cost = data.usage, data.cost
            if data.cost is not None:
                self.session_cost = add_cost(
                    self.session_cost, data.cost.amount, data.cost.currency
                )
            step = context_usage(
                self.figures, data.usage, output_chars=self.output_chars, rate=self.rate
            )
            self.rate = TokenRate.of(self.figures, data.usage) or self.rate
            self.session_tokens += step.used
            self.session_estimated = self.session_estimated or step.estimated
            return True
        return False

    def current(self) -> ContextUsage | None:
        """The last step's usage (its request's estimate until the step ends); None before the
        first request."""
        if self.figures is None:
            return None
        return context_usage(
            self.figures, self.usage, output_chars=self.output_chars, rate=self.rate
        )
