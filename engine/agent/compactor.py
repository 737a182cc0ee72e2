"""`/compact`: summarize the oldest history groups with the model, through the collection path.

Runs only between turns. The model is asked for the summary first; only when it answered are
`compact/start`, `compact/summary` and `compact/end` appended and the Context changed, so a failed
compaction changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.agent.options import DEFAULT_KEEP_GROUPS
from engine.agent.retry import with_retries
from engine.context.compaction import plan_compaction
from engine.context.egress import label_for_provenance
from engine.context.log_items import summary_message, summary_provenance
from engine.errors import TrellisError
from engine.events import CompactEnd, CompactStart, CompactSummary
from engine.gateway.base import GatewayError, ModelRequest, TextDelta
from engine.message import Message, Role, Source
from engine.privacy import join_all

if TYPE_CHECKING:
    from engine.agent.runtime import Runtime

INSTRUCTION = (
    "Summarize the conversation above for your own later use. Keep every fact, decision, file "
    "name, command, result and open question that later work may need; drop pleasantries and "
    "repetition. Write plain text, no preamble."
)


class CompactionError(TrellisError, RuntimeError):
    """Compaction could not run; nothing was changed."""


@dataclass(frozen=True, slots=True)
class CompactionResult:
    groups: int
    reclaimed: int
    summary: str


async def compact(
    rt: Runtime, *, turn_open: bool, keep_groups: int = DEFAULT_KEEP_GROUPS
) -> CompactionResult | None:
    """Summarize all but the newest `keep_groups` groups; None when there is nothing to compact."""
    if turn_open:
        raise CompactionError("cannot compact while a turn is running")
    # a `/model` made since the last turn: the summary is asked of the entry now bound, whose
    # egress is the one checked below
    await rt.bind_for_turn()
    context = rt.context
    barrier = min((r.earliest for r in rt.coop.ranges.values()), default=len(context))
    plan = plan_compaction(context.provenance_view, keep_groups=keep_groups, barrier=barrier)
    if plan is None:
        return None
    shell_class = rt.assembler.shell_class
    label = join_all(
        [
            label_for_provenance(context.provenance(i), shell_class=shell_class)
            for i in plan.reclaimed
        ]
    )
    binding = rt.assembler.binding
    allowed = binding.entry.effective_egress()
    if label.cls > allowed:
        raise CompactionError(
            f"the history to compact is {label.cls.name}; model {binding.name!r} accepts at most "
            f"{allowed.name}"
        )
    instruction = context.codec.encode_message(
        Message(Role.user, INSTRUCTION, Source("compaction"))
    )
    identity = rt.assembler.identity()
    request = ModelRequest(
        model=rt.model_id,
        system=identity[0].text if identity else "",
        items=(*(context[i] for i in plan.reclaimed), instruction),
    )
    text = (await _summary(rt, request)).strip()
    if not text:
        raise CompactionError("the model returned an empty summary; nothing was compacted")
    content = f"Summary of {plan.groups} earlier turn(s):\n\n{text}"
    rt.record(CompactStart(groups=plan.groups, earliest=plan.earliest))
    summary = CompactSummary(content=content, model=rt.model_id, label=label)
    event = rt.record(summary)
    rt.record(CompactEnd(earliest=plan.earliest, reclaimed=plan.reclaimed, carried=plan.carried))
    rt.coop.compact(plan, summary_message(summary), summary_provenance(event.seq, summary))
    rt.assembler.note_detached(plan.earliest)
    rt.assembler.note_break("compaction", f"{plan.groups} earlier turn(s) summarized")
    rt.assembler.rebase_due()
    await rt.session.flush()
    return CompactionResult(groups=plan.groups, reclaimed=len(plan.reclaimed), summary=text)


async def _summary(rt: Runtime, request: ModelRequest) -> str:
    async def attempt() -> str:
        parts: list[str] = []
        async for delta in rt.gateway.stream(request):
            if isinstance(delta, TextDelta):
                parts.append(delta.text)
        return "".join(parts)

    try:
        return await with_retries(
            attempt, max_retries=rt.max_retries, backoff=rt.options.retry_backoff
        )
    except GatewayError as exc:
        raise CompactionError(f"the model could not summarize: {exc}") from exc
