"""Privacy labels by provenance, the egress gate (docs/spec/context-orchestration.md, privacy)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context.budget import Budget
from engine.context.egress import (
    EgressGate,
    EgressRefusedError,
    default_egress_class,
    is_secret_path,
    label_for_provenance,
    secret_label,
    tool_result_label,
)
from engine.context.floor import Block, Layer
from engine.context.orchestrator import AssembledContext, ContextOrchestrator
from engine.context.provenance import ItemKind, Provenance
from engine.message import Source
from engine.privacy import PrivacyClass, PrivatizationLabel, join_all
from tests.orchestrator.session import Session

FLOOR = (Block.of(Layer.identity, "system_prompt", "You are Trellis."),)
INTERNAL = PrivatizationLabel(cls=PrivacyClass.internal)

names = st.frozensets(st.sampled_from(["a", "b", "c", "d"]), max_size=3)
labels = st.builds(
    PrivatizationLabel,
    cls=st.sampled_from(list(PrivacyClass)),
    weight=st.integers(min_value=0, max_value=5),
    categories=names,
    subjects=names,
    parents=names,
)


def at_least(joined: PrivatizationLabel, label: PrivatizationLabel) -> bool:
    return (
        joined.cls >= label.cls
        and joined.weight >= label.weight
        and joined.categories >= label.categories
        and joined.subjects >= label.subjects
        and joined.parents >= label.parents
    )


@settings(max_examples=200, deadline=None)
@given(labels, labels, labels)
def test_label_joins_never_lower(
    a: PrivatizationLabel, b: PrivatizationLabel, c: PrivatizationLabel
) -> None:
    joined = a.join(b)
    assert at_least(joined, a)
    assert at_least(joined, b)
    assert joined.join(c) == a.join(b.join(c))
    assert join_all([a, b, c]) == a.join(b).join(c)


@pytest.mark.parametrize(
    ("provenance", "expected"),
    [
        (None, PrivacyClass.restricted),
        (Provenance(kind=ItemKind.message, source=Source("user")), PrivacyClass.internal),
        (Provenance(kind=ItemKind.message, source=Source("plugin")), PrivacyClass.internal),
        (Provenance(kind=ItemKind.message), PrivacyClass.restricted),
        (
            Provenance(
                kind=ItemKind.message,
                source=Source("plugin", "vault"),
                label=PrivatizationLabel(cls=PrivacyClass.private),
            ),
            PrivacyClass.private,
        ),
        (Provenance(kind=ItemKind.tool_result, source=Source("tool")), PrivacyClass.restricted),
        (
            Provenance(kind=ItemKind.tool_result, source=Source("tool"), label=INTERNAL),
            PrivacyClass.internal,
        ),
        (
            Provenance(kind=ItemKind.tool_result, source=Source("tool", "run_shell")),
            PrivacyClass.private,
        ),
        (Provenance(kind=ItemKind.area, owner="plan"), PrivacyClass.internal),
        (Provenance(kind=ItemKind.assistant), PrivacyClass.restricted),
        (Provenance(kind=ItemKind.assistant, label=INTERNAL), PrivacyClass.internal),
        (Provenance(kind=ItemKind.promoted), PrivacyClass.restricted),
        (Provenance(kind=ItemKind.summary, label=INTERNAL), PrivacyClass.internal),
    ],
)
def test_labels_by_provenance(provenance: Provenance | None, expected: PrivacyClass) -> None:
    assert label_for_provenance(provenance, shell_class=PrivacyClass.private).cls is expected


def test_shell_output_never_lowers_a_declared_label() -> None:
    declared = PrivatizationLabel(cls=PrivacyClass.restricted)
    provenance = Provenance(
        kind=ItemKind.tool_result, source=Source("tool", "run_shell"), label=declared
    )
    assert label_for_provenance(provenance).cls is PrivacyClass.restricted


@pytest.mark.parametrize(
    ("path", "secret"),
    [
        (".env", True),
        (".env.local", True),
        ("deploy/server.pem", True),
        ("keys/api.KEY", True),
        ("home/.ssh/id_ed25519", True),
        ("aws_credentials.json", True),
        ("credentials/notes.txt", True),
        ("src/environment.py", False),
        ("README.md", False),
        ("keyboard.py", False),
    ],
)
def test_secret_patterns(path: str, secret: bool) -> None:
    assert is_secret_path(path) is secret
    expected = PrivacyClass.restricted if secret else PrivacyClass.internal
    label = secret_label(path)
    assert label.cls is expected
    assert label.parents == frozenset({f"file:{path}"})


def test_tool_results_carry_what_they_read() -> None:
    assert tool_result_label("read_file", ["src/a.py"]).cls is PrivacyClass.internal
    assert tool_result_label("search", ["src/a.py", ".env"]).cls is PrivacyClass.restricted
    assert tool_result_label("list_files").cls is PrivacyClass.internal
    assert (
        tool_result_label("run_shell", shell_class=PrivacyClass.private).cls is PrivacyClass.private
    )


@pytest.mark.parametrize(
    ("provider", "url", "expected"),
    [
        ("scripted", None, PrivacyClass.restricted),
        ("openai", "http://127.0.0.1:11434/v1", PrivacyClass.restricted),
        ("openai", "http://localhost:8080/v1", PrivacyClass.restricted),
        ("openai", "http://[::1]:8080/v1", PrivacyClass.restricted),
        ("openai", "https://api.openai.com/v1", PrivacyClass.internal),
        ("anthropic", None, PrivacyClass.internal),
    ],
)
def test_default_egress_classes(provider: str, url: str | None, expected: PrivacyClass) -> None:
    assert default_egress_class(provider, url) is expected


def session_that_read_a_secret() -> tuple[Session, int]:
    session = Session()
    session.add("read .env", turn=1)
    session.add("calling read_file", kind=ItemKind.assistant, turn=1, label=INTERNAL)
    result = session.add(
        "API_KEY=sk-123",
        kind=ItemKind.tool_result,
        turn=1,
        source=Source("tool", "read_file"),
        label=tool_result_label("read_file", [".env"]),
    )
    return session, result


def assemble(session: Session) -> AssembledContext:
    return ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=1,
        retained_owners=frozenset(),
        floor=FLOOR,
        budget=Budget(),
    )


def test_a_restricted_file_read_by_a_tool_blocks_a_remote_entry_and_passes_the_scripted_one() -> (
    None
):
    session, result_index = session_that_read_a_secret()
    assembled = assemble(session)
    assert assembled.label.cls is PrivacyClass.restricted
    assert "file:.env" in assembled.label.parents
    remote = default_egress_class("openai", "https://api.example.com/v1")
    with pytest.raises(EgressRefusedError) as refused:
        EgressGate.check(assembled, egress_class=remote, model="remote")
    error = refused.value
    assert (error.privacy_class, error.allowed) == (PrivacyClass.restricted, PrivacyClass.internal)
    seq = session.provenances[result_index].seq
    assert error.source == f"tool result of read_file (file:.env) at seq {seq}"
    assert str(error).startswith(
        f"tool result of read_file (file:.env) at seq {seq} is restricted; "
        "model 'remote' accepts at most internal"
    )
    EgressGate.check(assembled, egress_class=default_egress_class("scripted"), model="scripted")


def test_the_gate_names_the_earliest_offending_material() -> None:
    session, _ = session_that_read_a_secret()
    session.add("unlabelled", kind=ItemKind.assistant, turn=1)
    assembled = assemble(session)
    with pytest.raises(EgressRefusedError, match="tool result of read_file"):
        EgressGate.check(assembled, egress_class=PrivacyClass.internal, model="remote")


def test_a_restricted_floor_block_is_refused() -> None:
    session = Session()
    session.add("hello", turn=1)
    codex = Block.of(Layer.codex, ".env.md", "x", secret_label(".env.md"))
    assembled = ContextOrchestrator().assemble(
        session.items,
        session.provenances,
        current_turn=1,
        retained_owners=frozenset(),
        floor=(*FLOOR, codex),
        budget=Budget(),
    )
    with pytest.raises(EgressRefusedError, match=r"floor block \.env\.md \(layer 2\)"):
        EgressGate.check(assembled, egress_class=PrivacyClass.internal, model="remote")


def test_an_internal_request_passes_a_remote_entry() -> None:
    session = Session()
    session.add("hello", turn=1)
    assembled = assemble(session)
    assert assembled.label.cls is PrivacyClass.internal
    EgressGate.check(assembled, egress_class=PrivacyClass.internal, model="remote")
