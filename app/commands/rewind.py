"""`trellis rewind ID --to TURN [--code | --conversation] [--yes] [--overwrite]`.

The session is opened as `trellis run --resume` opens it (its writer lease taken: a session open
elsewhere is refused). The plan is printed before anything is touched; files someone else
changed since the agent left them stop the rewind (exit 1, named) unless `--overwrite`, decided
from the plan, so nothing is written. `--to undo` takes the last rewind back.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from app.config_report import reported
from app.session_options import UsageError
from engine.agent.factory import open_agent
from engine.agent.session_config import load_session_config
from engine.redaction import RedactingLogFilter
from engine.rewind_report import plan_text, result_text
from engine.store.chooser import open_store
from engine.store.settings import chosen_settings

EXIT_BLOCKED = 1
UNDO = "undo"


def target_turn(text: str) -> int | None:
    """`--to`: a turn number, or `undo` (None)."""
    if text == UNDO:
        return None
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--to {text!r}: expected a turn number or {UNDO}") from None


async def _confirmed(question: str) -> bool:
    if not sys.stdin.isatty():
        raise UsageError("not rewinding without a terminal to ask on: pass --yes")
    try:
        answer = await asyncio.to_thread(input, question)
    except EOFError:  # Ctrl+D: no answer is no
        return False
    return answer.strip().lower() in ("y", "yes")


def main(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    return asyncio.run(rewind(args, log_secrets))


async def rewind(args: argparse.Namespace, log_secrets: RedactingLogFilter | None) -> int:
    """The session's config is reported (its notices printed) as `trellis run` reports it."""
    to_turn = target_turn(args.to)
    conversation = not args.code
    code = not args.conversation
    async with open_store(
        await asyncio.to_thread(chosen_settings, args.store, Path.cwd())
    ) as store:
        session_id = (await store.resolve(args.id)).id
        loaded = await load_session_config(store, session_id, trust_project=args.trust_project)
        agent = await open_agent(
            config=reported(loaded, log_secrets), cwd=Path.cwd(), store=store, session_id=session_id
        )
        try:
            point, plan = await agent.plan_rewind(to_turn, code=code)
            print(plan_text(point, plan, conversation=conversation))
            if plan is not None and not conversation:
                if plan.refused is not None:
                    print(f"trellis: cannot rewind the files: {plan.refused}", file=sys.stderr)
                    return EXIT_BLOCKED
                if plan.plan is None:
                    print("nothing to rewind", file=sys.stderr)
                    return 0
            if plan is not None and plan.conflicts and not args.overwrite:
                print(
                    "trellis: changed outside the agent since it left them: "
                    f"{', '.join(plan.conflicts)}; nothing rewound (--overwrite replaces them)",
                    file=sys.stderr,
                )
                return EXIT_BLOCKED
            if not args.yes and not await _confirmed("Rewind? [y/N] "):
                print("nothing rewound", file=sys.stderr)
                return EXIT_BLOCKED
            result = await agent.rewind(
                to_turn, conversation=conversation, code=code, overwrite=args.overwrite
            )
            print(result_text(result, code_asked=plan is not None))
        finally:
            await agent.aclose()
    return 0
