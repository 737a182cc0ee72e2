"""What a workspace checkpoint costs, on workspaces of 1,000 and 10,000 files; prints JSON.

Run `python -m tests.bench.checkpoints`. Per size: `cold_ms` is a new workspace's first open and
checkpoint (the shadow repository made, every file hashed into it); `warm_unchanged_ms` a
checkpoint when nothing changed (target: at most 50 ms at 10,000 files); `one_file_change_ms` a
checkpoint after one file changed (the change journal's path: see DESIGN-NOTES "Checkpoints"); `new_session_ms` the first open and checkpoint of a second
session in a workspace that already has checkpoints (the cold cost a new session pays);
`growth_bytes_per_checkpoint` what the shadow repository grows by per one-file checkpoint.
Medians of `RUNS` runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from engine.checkpoints import CheckpointStore, Unavailable, disk_usage
from engine.config import CheckpointsConfig

SIZES = (1_000, 10_000)
RUNS = 20
FILES_PER_FOLDER = 50


def make_workspace(root: Path, files: int) -> int:
    """Files of a few lines to a few kilobytes, fifty to a folder, two folders deep; their
    bytes."""
    root.mkdir()
    total = 0
    for number in range(files):
        folder = (
            root / f"pkg{number // (FILES_PER_FOLDER * 10)}" / f"mod{number // FILES_PER_FOLDER}"
        )
        folder.mkdir(parents=True, exist_ok=True)
        body = f"# file {number}\n" + "value = 1\n" * (number % 200)
        total += (folder / f"file{number}.py").write_bytes(body.encode())
    return total


def edit(target: Path, run: int) -> None:
    target.write_text(f"edit {run}\n" + "value = 2\n" * 50)


async def open_store(root: Path, data: Path, session: str) -> CheckpointStore:
    store = await CheckpointStore.open(root, data, CheckpointsConfig(), session)
    assert not isinstance(store, Unavailable), store
    return store


def shadow_bytes(data: Path) -> int:
    return sum(usage.bytes for usage in disk_usage(data))


async def measure(files: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="trellis-bench-") as tmp:
        root = Path(tmp, "ws")
        data = Path(tmp, "data")
        size = make_workspace(root, files)
        start = time.perf_counter()
        store = await open_store(root, data, "first")
        await store.take("cold")
        cold = (time.perf_counter() - start) * 1000
        unchanged: list[float] = []
        for _ in range(RUNS):
            start = time.perf_counter()
            await store.take("unchanged")
            unchanged.append((time.perf_counter() - start) * 1000)
        changed: list[float] = []
        target = root / "pkg0" / "mod0" / "file0.py"
        before = shadow_bytes(data)
        for run in range(RUNS):
            edit(target, run)
            start = time.perf_counter()
            await store.take("one file")
            changed.append((time.perf_counter() - start) * 1000)
        growth = (shadow_bytes(data) - before) / RUNS
        start = time.perf_counter()
        second = await open_store(root, data, "second")
        await second.take("new session")
        new_session = (time.perf_counter() - start) * 1000
        await store.aclose()
        await second.aclose()
        return {
            "files": files,
            "workspace_bytes": size,
            "cold_ms": round(cold, 1),
            "warm_unchanged_ms": round(statistics.median(unchanged), 1),
            "one_file_change_ms": round(statistics.median(changed), 1),
            "new_session_ms": round(new_session, 1),
            "growth_bytes_per_checkpoint": round(growth),
            "store_bytes": shadow_bytes(data),
        }


async def main() -> dict[str, Any]:
    return {"runs": RUNS, "cpus": os.cpu_count(), "sizes": [await measure(n) for n in SIZES]}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main()), indent=2))
