"""The HTML export: one self-contained page that loads nothing and runs no script.

Injected context and tool calls are cards set apart from the conversation; tool output longer than
`LONG_OUTPUT_LINES` lines or `LONG_OUTPUT_CHARS` characters is folded into a `<details>` element,
which browsers open and close without JavaScript.
"""

from __future__ import annotations

from html import escape

from engine.events import MessageData, WorkspaceFileChange
from engine.rewind_report import files_summary
from replay.entries import (
    AreaEntry,
    AssistantEntry,
    CheckpointsOffEntry,
    CommandEntry,
    CompactEntry,
    ContextEntry,
    ErrorEntry,
    GcEntry,
    ModeEntry,
    ModelEntry,
    RetryEntry,
    RewindEntry,
    ToolEntry,
    TranscriptEntry,
    TurnEndEntry,
    TurnEntry,
    UserEntry,
)
from replay.export.view import SessionView
from replay.file_diff import change_diff, change_heading, file_diff, file_line
from replay.wording import (
    UNTITLED,
    area_line,
    arguments_text,
    checkpoints_off_line,
    command_line,
    compact_line,
    cut_short,
    gc_line,
    mode_line,
    model_line,
    retry_line,
    rewind_files,
    rewind_line,
    spent_line,
    tool_state,
    turn_end_line,
    turn_line,
    when,
)

LONG_OUTPUT_LINES = 20
LONG_OUTPUT_CHARS = 2_000

_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
  color: #1d1d1f; background: #fff; }
header dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
header dt { color: #666; }
h2.turn { font-size: 1rem; border-top: 2px solid #ccc; padding-top: .6rem; margin-top: 2rem; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f6f6; padding: .5rem;
  border-radius: 4px; margin: .3rem 0; }
.entry { margin: .8rem 0; }
.who { font-weight: 600; font-size: .85rem; color: #555; }
.user .text { background: #eef4ff; padding: .5rem .7rem; border-radius: 6px; }
.assistant .text { padding: .2rem 0; }
.reasoning { color: #666; font-style: italic; }
.card { border: 1px solid #ccc; border-radius: 6px; padding: .4rem .7rem; }
.context { border-left: 4px solid #b58900; background: #fdf8e8; }
.tool { border-left: 4px solid #268bd2; background: #f3f8fc; }
.tool.error, .tool.cancelled { border-left-color: #dc322f; }
.note { color: #666; font-size: .9rem; }
.error-entry { color: #dc322f; }
"""


def _text(text: str, css: str = "text") -> str:
    return f'<pre class="{css}">{escape(text)}</pre>'


def _output(text: str, is_error: bool) -> str:
    """A tool's result; long ones folded."""
    return _folded("Error" if is_error else "Result", text, "output")


def _folded(heading: str, text: str, css: str) -> str:
    """`text` under `heading`, folded into a `<details>` when long."""
    lines = text.count("\n") + 1
    if lines <= LONG_OUTPUT_LINES and len(text) <= LONG_OUTPUT_CHARS:
        return f'<div class="who">{escape(heading)}</div>{_text(text, css)}'
    return (
        f"<details><summary>{escape(heading)}: {lines} lines, {len(text)} characters</summary>"
        f"{_text(text, css)}</details>"
    )


def _file_diffs(files: tuple[WorkspaceFileChange, ...]) -> str:
    return "".join(
        _folded(file_line(change).capitalize(), file_diff(change), "output diff")
        for change in files
    )


def _list(items: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{escape(item)}</li>" for item in items) + "</ul>"


def _messages(messages: tuple[MessageData, ...]) -> str:
    return "".join(_text(m.content) for m in messages)


def _entry(entry: TranscriptEntry) -> str:
    match entry:
        case TurnEntry():
            rule = f'<h2 class="turn" id="turn-{entry.number}">{escape(turn_line(entry))}</h2>'
            changes = entry.changes
            if changes is None or not changes.files:
                return rule
            return (
                f'{rule}<div class="entry note changes">{escape(files_summary(changes.files))}:'
                f"{_list([file_line(f) for f in changes.files])}</div>"
            )
        case TurnEndEntry():
            return f'<div class="entry error-entry">{escape(turn_end_line(entry))}</div>'
        case UserEntry():
            parts = ['<div class="entry user"><div class="who">User</div>', _text(entry.content)]
            if entry.original is not None:
                parts.append(
                    '<div class="note">A prompt listener rewrote this; the user typed:</div>'
                )
                parts.append(_text(entry.original))
            for attachment in entry.attachments:
                name = f"{attachment.name} ({attachment.mime_type})"
                parts.append(f'<div class="note">Attachment: {escape(name)}</div>')
                if attachment.text:
                    parts.append(_output(attachment.text, False))
            return "".join(parts) + "</div>"
        case ContextEntry():
            return (
                f'<div class="entry card context"><div class="who">Injected context · '
                f"{escape(entry.heading)}</div>{_text(entry.content)}</div>"
            )
        case AssistantEntry():
            parts = [
                f'<div class="entry assistant"><div class="who">Assistant · '
                f"{escape(entry.model or 'model')} · step {entry.step}</div>"
            ]
            if entry.reasoning:
                parts.append(_text(entry.reasoning, "reasoning"))
            if entry.content:
                parts.append(_text(entry.content))
            if cut_short(entry) is not None:
                parts.append(f'<div class="note">Reply ended: {escape(str(entry.finish))}</div>')
            return "".join(parts) + "</div>"
        case ToolEntry():
            state = tool_state(entry)
            parts = [
                f'<div class="entry card tool {escape(entry.status)}"><div class="who">Tool call · '
                f"{escape(entry.name)} ({escape(state)})</div>",
                _text(arguments_text(entry.arguments), "arguments"),
            ]
            if entry.result is not None:
                parts.append(_output(entry.result, entry.is_error))
            if entry.change is not None:
                heading = change_heading(entry.change).capitalize()
                parts.append(_folded(heading, change_diff(entry.change), "output diff"))
            parts.append(_file_diffs(entry.files))
            return "".join(parts) + "</div>"
        case AreaEntry():
            return (
                f'<div class="entry card"><div class="note">{escape(area_line(entry))}</div>'
                f"<details><summary>Rendered messages</summary>{_messages(entry.messages)}"
                "</details></div>"
            )
        case GcEntry():
            promoted = _messages(entry.promoted)
            return f'<div class="entry note">{escape(gc_line(entry))}{promoted}</div>'
        case CompactEntry():
            summary = _text(entry.summary) if entry.summary else ""
            return f'<div class="entry card"><div class="note">{escape(compact_line(entry))}</div>{summary}</div>'
        case RetryEntry():
            return f'<div class="entry note">{escape(retry_line(entry))}</div>'
        case ModelEntry():
            return f'<div class="entry note">{escape(model_line(entry))}</div>'
        case ModeEntry():
            return f'<div class="entry note">{escape(mode_line(entry))}</div>'
        case CommandEntry():
            return (
                f'<div class="entry card"><div class="who">{escape(command_line(entry))}</div>'
                f"{_text(entry.result)}</div>"
            )
        case RewindEntry():
            prompt = _text(entry.prompt) if entry.prompt else ""
            before = ", before:" if entry.prompt else ""
            done = rewind_files(entry)
            return (
                f'<div class="entry card"><div class="note">{escape(rewind_line(entry))}{before}'
                f"</div>{prompt}{_list(done) if done else ''}</div>"
            )
        case CheckpointsOffEntry():
            return f'<div class="entry note">{escape(checkpoints_off_line(entry))}</div>'
        case ErrorEntry():
            return f'<div class="entry error-entry">Error: {escape(entry.message)}</div>'


def _header(view: SessionView) -> str:
    info = view.info
    rows = [
        ("Session", info.id),
        ("Workspace", info.cwd),
        ("Model", info.model or "-"),
        ("Created", when(info.created)),
        ("Updated", when(info.updated)),
        ("Turns", str(info.turns)),
        ("Events", str(info.event_count)),
    ]
    spent = spent_line(view.usage, view.cost)
    if spent:
        rows.append(("Used", spent))
    if info.parent_id is not None:
        rows.append(("Forked from", f"{info.parent_id} at seq {info.fork_seq}"))
    if view.max_class is not None:
        rows.append(("Redacted", f"everything above {view.max_class.name}"))
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    return f"<header><h1>{escape(view.title or UNTITLED)}</h1><dl>{items}</dl></header>"


def to_html(view: SessionView) -> str:
    body = "\n".join(_entry(entry) for entry in view.transcript.entries)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(view.title or UNTITLED)} · Trellis</title>"
        f"<style>{_STYLE}</style></head>\n<body>{_header(view)}\n<main>\n{body}\n</main></body></html>\n"
    )
