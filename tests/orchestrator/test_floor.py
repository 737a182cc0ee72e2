"""The stable floor: hashed blocks, the prefix digest, the codex, karma and the floor log."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from engine.context.floor import (
    Block,
    FloorBuilder,
    FloorLog,
    Layer,
    PinBoard,
    environment_block,
    karma_blocks,
    order_floor,
    prefix_digest,
)
from engine.events import PinAdd, PinRemove
from engine.privacy import PrivacyClass


def floor() -> tuple[Block, ...]:
    return (
        Block.of(Layer.identity, "system_prompt", "You are Trellis."),
        Block.of(Layer.codex, "AGENTS.md", "Instructions from AGENTS.md:\nbe brief"),
        environment_block(cwd="/w", platform="linux", model="m", tools=["b", "a"], grant_epoch=1),
        *karma_blocks([("p1", "use tabs")]),
    )


def test_a_block_hash_is_sha256_of_its_text() -> None:
    block = Block.of(Layer.identity, "system_prompt", "You are Trellis.")
    assert block.content_hash == hashlib.sha256(b"You are Trellis.").hexdigest()
    with pytest.raises(ValueError, match="wrong content hash"):
        Block(layer=Layer.identity, key="k", text="a", content_hash=block.content_hash)


def test_the_digest_is_stable_for_the_same_floor() -> None:
    assert prefix_digest(floor()) == prefix_digest(floor())
    assert len(prefix_digest(floor())) == 64


def test_any_floor_change_changes_the_digest() -> None:
    base = floor()
    digest = prefix_digest(base)
    text_changed = (base[0], replace_text(base[1], "be verbose"), *base[2:])
    key_changed = (base[0], Block.of(Layer.codex, "TRELLIS.md", base[1].text), *base[2:])
    layer_changed = (base[0], Block.of(Layer.karma, "AGENTS.md", base[1].text), *base[2:])
    reordered = (base[1], base[0], *base[2:])
    shorter = base[:-1]
    variants = [text_changed, key_changed, layer_changed, reordered, shorter]
    digests = {prefix_digest(v) for v in variants}
    assert digest not in digests
    assert len(digests) == len(variants)


def replace_text(block: Block, body: str) -> Block:
    return Block.of(block.layer, block.key, body)


def test_the_floor_is_ordered_by_layer_and_refuses_duplicates() -> None:
    base = floor()
    assert order_floor(reversed(base[:3])) == base[:3]
    with pytest.raises(ValueError, match="identity:system_prompt"):
        order_floor([base[0], base[0]])


def test_the_environment_block_is_byte_stable() -> None:
    one = environment_block(cwd="/w", platform="linux", model="m", tools=["b", "a"], grant_epoch=2)
    two = environment_block(cwd="/w", platform="linux", model="m", tools=["a", "b"], grant_epoch=2)
    assert one == two
    assert "tools: a, b" in one.text
    assert "grant epoch: 2" in one.text


async def test_codex_reads_the_configured_files_verbatim(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("# Rules\nbe brief\n", encoding="utf-8")
    builder = FloorBuilder(system_prompt="You are Trellis.", workspace_root=tmp_path)
    blocks = await builder.codex()
    assert [b.key for b in blocks] == ["AGENTS.md"]  # TRELLIS.md is missing: no block
    assert blocks[0].text == "Instructions from AGENTS.md:\n# Rules\nbe brief\n"
    assert blocks[0].label.cls is PrivacyClass.internal


async def test_codex_truncation_is_declared_inside_the_block(tmp_path: Path) -> None:
    (tmp_path / "TRELLIS.md").write_text("é" * 20, encoding="utf-8")  # 40 bytes
    builder = FloorBuilder(system_prompt="", workspace_root=tmp_path, instruction_max_bytes=15)
    (block,) = await builder.codex()
    assert block.text.startswith("Instructions from TRELLIS.md:\n" + "é" * 7 + "\n")
    assert "[truncated: TRELLIS.md is 40 bytes; only the first 14 are shown]" in block.text


async def test_codex_is_reread_at_each_turn_start(tmp_path: Path) -> None:
    builder = FloorBuilder(system_prompt="S", workspace_root=tmp_path)
    first = await builder.build(environment=None)
    (tmp_path / "AGENTS.md").write_text("new rule", encoding="utf-8")
    second = await builder.build(environment=None)
    assert [b.layer for b in first] == [Layer.identity]
    assert [b.layer for b in second] == [Layer.identity, Layer.codex]
    assert prefix_digest(first) != prefix_digest(second)


async def test_codex_does_not_follow_a_symlink_out_of_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "secret.txt").write_text("outside words", encoding="utf-8")
    (workspace / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
    (workspace / "shared.md").write_text("inside words", encoding="utf-8")
    (workspace / "TRELLIS.md").symlink_to(workspace / "shared.md")  # inside: followed
    (block, inside) = await FloorBuilder(system_prompt="", workspace_root=workspace).codex()
    assert "outside words" not in block.text
    assert block.text == (
        "[AGENTS.md is not read: path 'AGENTS.md' is outside the workspace "
        "(a symlink points outside it)]"
    )
    assert inside.text == "Instructions from TRELLIS.md:\ninside words"


async def test_codex_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").mkdir()
    try:  # a device inside the workspace: /dev/zero's numbers; needs the right to make one
        os.mknod(tmp_path / "TRELLIS.md", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    except (PermissionError, AttributeError):
        pytest.skip("cannot make a device file here")
    blocks = await FloorBuilder(system_prompt="", workspace_root=tmp_path).codex()
    assert [b.text for b in blocks] == [
        "[AGENTS.md is not read: 'AGENTS.md' is a directory, not a regular file]",
        "[TRELLIS.md is not read: 'TRELLIS.md' is a device, not a regular file]",
    ]


def test_instruction_files_must_stay_inside_the_workspace(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="inside the workspace"):
        FloorBuilder(system_prompt="", workspace_root=tmp_path, instruction_files=("../x.md",))
    with pytest.raises(ValueError, match="positive"):
        FloorBuilder(system_prompt="", workspace_root=tmp_path, instruction_max_bytes=0)


async def test_the_whole_floor_in_layer_order(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("a", encoding="utf-8")
    (tmp_path / "TRELLIS.md").write_text("t", encoding="utf-8")
    builder = FloorBuilder(system_prompt="S", workspace_root=tmp_path)
    env = environment_block(cwd="/w", platform="linux", model="m", tools=[], grant_epoch=1)
    blocks = await builder.build(environment=env, pins=[("p1", "one"), ("p2", "two")])
    assert [(int(b.layer), b.key) for b in blocks] == [
        (1, "system_prompt"),
        (2, "AGENTS.md"),
        (2, "TRELLIS.md"),
        (3, "environment"),
        (4, "pin:p1"),
        (4, "pin:p2"),
    ]


def test_pins_follow_pin_events() -> None:
    board = PinBoard()
    board.apply(PinAdd(pin_id="a", text="first"))
    board.apply(PinAdd(pin_id="b", text="second"))
    board.apply(PinRemove(pin_id="a"))
    board.apply(PinRemove(pin_id="missing"))
    assert board.pins == (("b", "second"),)
    assert [b.key for b in karma_blocks(board.pins)] == ["pin:b"]


def test_each_distinct_block_is_logged_once() -> None:
    log = FloorLog()
    first = log.new_blocks(floor())
    assert [p.layer for p in first] == [1, 2, 3, 4]
    assert log.new_blocks(floor()) == []
    added = karma_blocks([("p1", "use tabs"), ("p2", "no emoji")])
    (fresh,) = log.new_blocks((*floor()[:3], *added))
    assert (fresh.key, fresh.text) == ("pin:p2", "Pinned note: no emoji")
    assert fresh.hash == added[1].content_hash


def test_a_resumed_log_does_not_log_again() -> None:
    log = FloorLog()
    for block in floor():
        log.note(block.payload())
    assert log.new_blocks(floor()) == []


def test_block_label_does_not_enter_the_digest() -> None:
    block = Block.of(Layer.codex, "AGENTS.md", "x")
    restricted = replace(block, label=block.label.join(block.label.of(PrivacyClass.restricted)))
    assert prefix_digest([block]) == prefix_digest([restricted])
