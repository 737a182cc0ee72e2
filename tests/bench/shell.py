"""What the supervisor costs each run_shell call, beside a bare shell spawn in the same run; prints
JSON.

Run `python -m tests.bench.shell`. The baseline is what run_shell did before it had a supervisor:
`/bin/sh -c true` in a new session with its output on a pipe, awaited to its exit and end of file.
The supervised figure is a whole `run_shell` call of `true`. Both are medians of interleaved runs;
`added_ms` is their difference, the price of the extra interpreter start.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from engine.tools import ToolContext, default_registry

RUNS = 50


async def bare_shell() -> None:
    process = await asyncio.create_subprocess_shell(
        "true",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    await process.communicate()


async def main() -> dict[str, Any]:
    registry = default_registry()
    with tempfile.TemporaryDirectory() as tmp:
        ctx = ToolContext(root=Path(tmp), call_id="bench")

        async def supervised() -> None:
            out = await registry.call("run_shell", {"command": "true"}, ctx)
            assert out.content.endswith("[exit code 0]"), out.content

        timings: dict[str, list[float]] = {"bare": [], "run_shell": []}
        runs: dict[str, Callable[[], Awaitable[None]]] = {
            "bare": bare_shell,
            "run_shell": supervised,
        }
        for _ in range(RUNS):
            for name, run in runs.items():
                start = time.perf_counter()
                await run()
                timings[name].append((time.perf_counter() - start) * 1000)
    medians = {name: statistics.median(values) for name, values in timings.items()}
    return {
        "runs": RUNS,
        "bare_ms": round(medians["bare"], 2),
        "run_shell_ms": round(medians["run_shell"], 2),
        "added_ms": round(medians["run_shell"] - medians["bare"], 2),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main()), indent=2))
