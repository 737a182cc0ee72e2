"""Exports of every scenario: the JSON validates against the documented schema, the HTML is one
self-contained page, the Markdown shows context with its source and calls with their results, and
`max_class` removes every item above the class from every format."""

from __future__ import annotations

import json
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from engine.agent import Agent
from engine.config import Config, ModelEntry, ModelPrice
from engine.events import Event, Usage
from engine.gateway.scripted import Reply
from engine.message import AdditionalContext, Source
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.store.base import SessionInfo
from engine.tools import ToolOutput, ToolRegistry
from replay.export import FORMATS, export
from replay.export.schema import schema_text
from replay.redaction import redact
from tests.agent.conftest import FixedTool, FlakyStore, GateTool, MakeAgent, call
from tests.replay.live_scenarios import NAMES, Played, play

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "session-export.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text())


async def settle(agent: Agent, store: FlakyStore) -> Played:
    """An idle agent and its stored log (these tests read no live feed)."""
    await agent.when_idle()
    return Played(agent, (), (await store.inspect(agent.session_id)).events)


async def _info(store: FlakyStore, played: Played) -> SessionInfo:
    return await store.info(played.agent.session_id)


def test_the_documented_schema_is_the_generated_one() -> None:
    assert SCHEMA_PATH.read_text() == schema_text()
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


class PageCheck(HTMLParser):
    """Collects what would make a page load or run anything, and the classes of its cards."""

    def __init__(self) -> None:
        super().__init__()
        self.external: list[str] = []
        self.classes: list[str] = []
        self.details = 0
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "link", "img", "iframe", "object", "embed", "source", "video"):
            self.external.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "srcset", "action", "data") or name.startswith("on"):
                self.external.append(f"{tag} {name}={value}")
            if name == "class" and value:
                self.classes.extend(value.split())
        if tag == "details":
            self.details += 1
        if tag not in ("meta", "br"):
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open[-1:] == [tag], f"</{tag}> closes <{self.open[-1:]}>"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        if "@import" in data or "url(" in data:
            self.external.append(data[:40])


def parse_page(page: str) -> PageCheck:
    check = PageCheck()
    check.feed(page)
    check.close()
    assert check.open == []
    return check


@pytest.mark.parametrize("name", NAMES)
async def test_every_format_of_every_scenario(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play(name, make_agent, store)
    info = await _info(store, played)
    exported = json.loads(export(info, played.stored, "json"))
    jsonschema.validate(exported, SCHEMA)
    assert [e["seq"] for e in exported["events"]] == [e.seq for e in played.stored]
    assert exported["session"]["turns"] == info.turns
    page = parse_page(export(info, played.stored, "html"))
    assert page.external == []
    assert export(info, played.stored, "md").startswith("# ")


async def test_markdown_and_html_set_context_and_tools_apart(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play("injects", make_agent, store)
    info = await _info(store, played)
    markdown = export(info, played.stored, "md")
    assert "> **Injected context · hook: turn**\n>\n> in-turn note" in markdown
    assert (
        "**Tool call** `gate` (done)\n\n```json\n{}\n```\n\n*Result:*\n\n```text\ngate done\n```"
        in (markdown)
    )
    assert "> go" in markdown  # the user's words, quoted as the user's
    page = parse_page(export(info, played.stored, "html"))
    assert {"context", "tool", "user", "assistant"} <= set(page.classes)


async def test_long_tool_output_is_folded(make_agent: MakeAgent, store: FlakyStore) -> None:
    long = "\n".join(f"line {n}" for n in range(200))
    tools = ToolRegistry([FixedTool("long", long), FixedTool("short", "brief")])
    agent = await make_agent(
        [Reply(tool_calls=[call("long", "a"), call("short", "b")]), Reply(text="ok")], tools=tools
    )
    agent.send("go")
    played = await settle(agent, store)
    page = export(await _info(store, played), played.stored, "html")
    assert parse_page(page).details == 1
    assert "<details><summary>Result: 200 lines" in page
    assert '<div class="who">Result</div><pre class="output">brief</pre>' in page


async def test_the_models_headings_nest_under_their_turn_in_markdown(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    reply = (
        "# Plan\n\nFirst.\n\n## Steps\n\n```md\n# kept as code\n```\n\n"
        "Summary\n-------\n\n#### Deep"
    )
    agent = await make_agent([Reply(text=reply, reasoning="## Thinking\n\nhm")])
    agent.send("# my notes\nplease plan")
    played = await settle(agent, store)
    markdown = export(await _info(store, played), played.stored, "md")
    title, turn, *inside = (
        line for line in markdown.splitlines() if line.lstrip("> ").startswith("#")
    )
    assert title == "# # my notes"  # the session's title is the prompt's first line
    assert turn.startswith("## Turn 1 ")
    assert inside == [
        "> ### my notes",
        "> #### Thinking",
        "### Plan",
        "#### Steps",
        "# kept as code",
        "#### Summary",
        "###### Deep",
    ]


def test_an_unknown_format_is_named() -> None:
    info = SessionInfo(id="s", cwd="/w", created=0.0, updated=0.0)
    with pytest.raises(ValueError, match=r"'pdf'.*md, json, html"):
        export(info, [], "pdf")
    assert set(FORMATS) == {"md", "json", "html"}


# --- redaction ------------------------------------------------------------------------------------

PRIVATE = PrivatizationLabel.of(PrivacyClass.private)
RESTRICTED = PrivatizationLabel.of(PrivacyClass.restricted, "file:.env")


async def secrets(make_agent: MakeAgent, store: FlakyStore) -> Played:
    """Material of each class: a restricted tool result, private context, and the reply after."""
    reader = FixedTool("read_env", "")
    reader._output = ToolOutput("API_TOKEN=hunter2-restricted", label=RESTRICTED)
    gate = GateTool()
    agent = await make_agent(
        [
            Reply(tool_calls=[call("read_env", "r1"), call("gate", "g1")]),
            Reply(text="The token is hunter2-restricted, reasoned", reasoning="thinking hunter2"),
        ],
        tools=ToolRegistry([reader, gate]),
    )
    agent.inject(AdditionalContext("private-note-text", Source("notes"), label=PRIVATE))
    agent.send("show me the environment")
    await gate.started.wait()
    gate.gate.set()
    return await settle(agent, store)


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list | tuple):
        return set().union(*(_strings(v) for v in value)) if value else set()
    return set()


def _removed(events: tuple[Event, ...], max_class: PrivacyClass) -> set[str]:
    """The texts redaction takes out: in a hidden event's content, in no shown event."""
    shown: set[str] = set()
    hidden: set[str] = set()
    for event in events:
        kept = _strings(redact(event, max_class).data.model_dump(mode="json", exclude={"label"}))
        shown |= kept
        hidden |= _strings(event.data.model_dump(mode="json", exclude={"label"})) - kept
    return {t for t in hidden - shown if len(t) >= 6}


def _shows(output: str, fmt: str, text: str) -> bool:
    match fmt:
        case "html":
            return escape(text) in output
        case "json":
            return json.dumps(text, ensure_ascii=False)[1:-1] in output
        case _:
            return any(line in output for line in text.splitlines() if len(line) >= 6)


@pytest.mark.parametrize("max_class", [PrivacyClass.public, PrivacyClass.internal])
async def test_redaction_removes_everything_above_the_class_in_every_format(
    max_class: PrivacyClass, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await secrets(make_agent, store)
    info = await _info(store, played)
    removed = _removed(played.stored, max_class)
    assert {"API_TOKEN=hunter2-restricted", "private-note-text"} <= removed
    for fmt in FORMATS:
        output = export(info, played.stored, fmt, max_class=max_class)
        assert "hunter2" not in output
        assert [t for t in removed if _shows(output, fmt, t)] == [], fmt
        assert "[redacted: restricted]" in output
        assert ("[redacted: internal]" in output) is (max_class is PrivacyClass.public)
    exported = json.loads(export(info, played.stored, "json", max_class=max_class))
    jsonschema.validate(exported, SCHEMA)
    marked = [e for e in exported["events"] if "redacted" in e]
    assert {e["type"] for e in marked} >= {"tool/result", "user/message", "assistant/message"}


async def test_without_a_limit_everything_is_shown(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await secrets(make_agent, store)
    info = await _info(store, played)
    for fmt in FORMATS:
        output = export(info, played.stored, fmt)
        assert "hunter2-restricted" in output
        assert "redacted" not in output.replace('"redacted"', "")


@pytest.mark.parametrize("name", NAMES)
async def test_every_scenario_redacts_to_public(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play(name, make_agent, store)
    info = await _info(store, played)
    removed = _removed(played.stored, PrivacyClass.public)
    for fmt in FORMATS:
        output = export(info, played.stored, fmt, max_class=PrivacyClass.public)
        assert [t for t in removed if _shows(output, fmt, t)] == [], fmt


async def test_every_format_shows_the_token_parts_and_the_cost(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    entry = ModelEntry(
        provider="scripted", price=ModelPrice(input=3.0, output=15.0, cache_read=0.3)
    )
    cached = Usage(input_tokens=1_200, cache_read_tokens=9_800, output_tokens=230)
    agent = await make_agent(
        [Reply(text="one", usage=cached), Reply(text="two", usage=cached)],
        config=Config(default_model="priced", models={"priced": entry}),
    )
    for prompt in ("first", "second"):
        agent.send(prompt)
        await agent.when_idle()
    played = await settle(agent, store)
    info = await _info(store, played)
    # 1,200 x 3 + 9,800 x 0.3 + 230 x 15 = 9,990 per million, each turn
    turn = "in 1,200 · cache read 9,800 · out 230 tok · 0.0100 USD"
    session = "in 2,400 · cache read 19,600 · out 460 tok · 0.0200 USD"
    markdown = export(info, played.stored, "md")
    assert f"- Used: {session}\n" in markdown
    assert "## Turn 2 · completed · 1 step · " in markdown
    assert markdown.count(turn) == 2
    page = export(info, played.stored, "html")
    assert f"<dt>Used</dt><dd>{escape(session)}</dd>" in page
    assert page.count(escape(turn)) == 2
    exported = json.loads(export(info, played.stored, "json"))
    jsonschema.validate(exported, SCHEMA)
    assert exported["usage"] == {
        "input_tokens": 2_400,
        "output_tokens": 460,
        "cache_read_tokens": 19_600,
        "cache_write_tokens": 0,
    }
    assert exported["cost"] == {"USD": pytest.approx(0.01998)}
