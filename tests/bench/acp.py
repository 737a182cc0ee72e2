"""Benchmark: ACP over WebSocket against `trellis serve` running as its own process; prints JSON.

Run as `python -m tests.bench.acp [--rounds N]`. Two measures, each with its baseline in the same
run, in interleaved rounds:

- `session/load` of stored sessions of 1,000 and 10,000 turns (a tool call and two steps per turn):
  the time from sending the request to its `{}` answer and the frames received before it, beside
  a raw `websockets` server sending the very same frames (`raw_websockets`). Target: 10,000 turns
  under 2 s, and linear in size (10x the turns, at most about 10x the time). Each round loads each
  size once on a fresh connection, smaller first, then has the raw sender send its frames.
- Update throughput of one streamed reply (the scripted model streaming 20,000 words with no delay):
  `session/update` frames per second from the prompt to its answer, beside a raw `websockets`
  server (another process, the same settings: no compression) sending the very same frames as fast
  as it can. Target: at least 50% of the raw sender.

The client is a plain `websockets` connection that counts and decodes frames, so the figures are
the server's; `tests/acp/` drives the same server with the `acp` package's client. A second
baseline, `core_in_process`, runs the same requests on the protocol core in this process with no
socket at all: what the core and the engine cost alone, so the transport's share is the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from app.acp.core import AcpOptions, AcpServer
from engine.config import load_config
from tests.acp.long_session import store_session
from tests.acp.ws_peer import initialized, raw_socket, request, serving

SIZES = (1_000, 10_000)
LOAD_TARGET_S = 2.0
THROUGHPUT_TARGET = 0.5
STREAM_WORDS = 20_000
MAX_FRAME = 16 * 1024 * 1024


def client(url: str) -> AbstractAsyncContextManager[ClientConnection]:
    """A plain connection; no keepalive pings, since a load may keep the server's loop busy for
    longer than a ping timeout (what is measured is the time to the answer)."""
    return raw_socket(url, max_size=MAX_FRAME, compression=None, ping_interval=None)


async def call(
    ws: ClientConnection, ident: int, method: str, params: dict[str, Any]
) -> tuple[float, dict[str, Any], list[str]]:
    """Seconds from sending a request to its answer, the answer, and every frame before it."""
    start = time.perf_counter()
    await request(ws, ident, method, params)
    frames: list[str] = []
    while True:
        frame = await ws.recv()
        assert isinstance(frame, str)
        message = json.loads(frame)
        if "method" not in message and message.get("id") == ident:
            return time.perf_counter() - start, message, frames
        frames.append(frame)


async def timed_load(url: str, cwd: Path, session_id: str) -> tuple[float, list[str]]:
    """Seconds from `session/load` to its `{}` answer, and the frames before it."""
    async with client(url) as ws:
        await initialized(ws)
        params = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
        elapsed, answer, frames = await call(ws, 1, "session/load", params)
    assert answer.get("result") == {}, answer
    return elapsed, frames


async def streamed_reply(url: str, cwd: Path) -> tuple[float, list[str]]:
    """Seconds from `session/prompt` to its answer, and the `session/update` frames of the reply."""
    async with client(url) as ws:
        await initialized(ws)
        _, opened, _ = await call(ws, 1, "session/new", {"cwd": str(cwd), "mcpServers": []})
        prompt = [{"type": "text", "text": "go"}]
        params = {"sessionId": opened["result"]["sessionId"], "prompt": prompt}
        elapsed, answer, frames = await call(ws, 2, "session/prompt", params)
    assert answer["result"]["stopReason"] == "end_turn", answer
    return elapsed, [f for f in frames if '"session/update"' in f]


RAW_SENDER = """
import asyncio, json, sys
from websockets.asyncio.server import serve

frames = json.load(open(sys.argv[1]))

async def send_all(ws):
    await ws.recv()  # the client's go
    for frame in frames:
        await ws.send(frame)
    await ws.send("done")

async def main():
    async with serve(send_all, "127.0.0.1", 0, compression=None, max_size=2**24) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.get_running_loop().create_future()

asyncio.run(main())
"""


async def raw_stream(port: int) -> tuple[float, int]:
    """Seconds for the raw sender's frames, decoded as the Trellis client decodes them."""
    async with connect(f"ws://127.0.0.1:{port}", max_size=MAX_FRAME, compression=None) as ws:
        start = time.perf_counter()
        await ws.send("go")
        count = 0
        while (frame := await ws.recv()) != "done":
            json.loads(frame)
            count += 1
        return time.perf_counter() - start, count


@asynccontextmanager
async def raw_sender(frames: list[str], file: Path) -> AsyncIterator[int]:
    """A raw `websockets` server in its own process that sends `frames` to each client that
    asks; yields its port."""
    await asyncio.to_thread(file.write_text, json.dumps(frames), encoding="utf-8")
    raw = await asyncio.create_subprocess_exec(
        sys.executable, "-c", RAW_SENDER, str(file), stdout=asyncio.subprocess.PIPE
    )
    try:
        assert raw.stdout is not None
        yield int(await raw.stdout.readline())
    finally:
        raw.terminate()
        await raw.wait()


def long_reply_config(root: Path) -> str:
    script = root / "long.json"
    reply = {"text": "word " * STREAM_WORDS, "chunk_delay": 0}
    script.write_text(json.dumps({"replies": [reply]}), encoding="utf-8")
    return f'default_model = "long"\n[models.long]\nprovider = "scripted"\nscript = "{script}"\n'


class CoreClient:
    """The protocol core in this process, without a socket: what the same work costs the core
    alone (each message it sends is decoded, as the socket client decodes each frame)."""

    def __init__(self, server: AcpServer) -> None:
        self.frames = 0
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next = 0
        self._connection = server.connect(self._sent, connection_id=f"bench-{id(self)}")

    async def _sent(self, text: str) -> None:
        self.frames += 1
        message = json.loads(text)
        waiting = self._answers.pop(message.get("id"), None) if "method" not in message else None
        if waiting is not None:
            waiting.set_result(message)

    async def call(self, method: str, params: dict[str, Any]) -> tuple[float, dict[str, Any], int]:
        """Seconds to the answer, the answer, and the messages sent before it."""
        self._next += 1
        answer = asyncio.get_running_loop().create_future()
        self._answers[self._next] = answer
        before = self.frames
        start = time.perf_counter()
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        await self._connection.receive(json.dumps(message))
        result = await answer
        return time.perf_counter() - start, result, self.frames - before - 1

    async def close(self) -> None:
        await self._connection.close()


async def core_load(options: AcpOptions, cwd: Path, session_id: str) -> float:
    server = AcpServer(options)
    client = CoreClient(server)
    try:
        await client.call("initialize", {"protocolVersion": 1})
        params = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
        elapsed, answer, _ = await client.call("session/load", params)
    finally:
        await client.close()
        await server.aclose()
    assert answer.get("result") == {}, answer
    return elapsed


async def core_stream(options: AcpOptions, cwd: Path) -> float:
    """`session/update` messages per second of the streamed reply, in process."""
    server = AcpServer(options)
    client = CoreClient(server)
    try:
        await client.call("initialize", {"protocolVersion": 1})
        _, opened, _ = await client.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        prompt = [{"type": "text", "text": "go"}]
        params = {"sessionId": opened["result"]["sessionId"], "prompt": prompt}
        elapsed, _, sent = await client.call("session/prompt", params)
    finally:
        await client.close()
        await server.aclose()
    return sent / elapsed


def summary(times: list[float]) -> dict[str, float]:
    return {
        "median_s": round(statistics.median(times), 3),
        "first_s": round(times[0], 3),
        "max_s": round(max(times), 3),
    }


async def bench_load(tmp: Path, rounds: int) -> dict[str, Any]:
    with serving(tmp, name="load") as server:
        ids = {n: await store_session(server.db, server.root, n) for n in SIZES}
        copy = tmp / "core-sessions.sqlite"  # the in-process core's own copy: no lease to share
        shutil.copyfile(server.db, copy)
        core = AcpOptions(store_path=copy, roots=[server.root])
        runs: dict[int, list[float]] = {n: [] for n in SIZES}
        raw_runs: dict[int, list[float]] = {n: [] for n in SIZES}
        core_runs: dict[int, list[float]] = {n: [] for n in SIZES}
        frames: dict[int, list[str]] = {}
        for n in SIZES:  # the frames the raw sender sends: the very ones Trellis sends
            _, frames[n] = await timed_load(server.url, server.root, ids[n])
        async with (
            raw_sender(frames[SIZES[0]], tmp / "load-small.json") as small_port,
            raw_sender(frames[SIZES[1]], tmp / "load-large.json") as large_port,
        ):
            ports = dict(zip(SIZES, (small_port, large_port), strict=True))
            for _ in range(rounds):
                for n in SIZES:
                    runs[n].append((await timed_load(server.url, server.root, ids[n]))[0])
                    raw_runs[n].append((await raw_stream(ports[n]))[0])
                    core_runs[n].append(await core_load(core, server.root, ids[n]))
    sizes: dict[str, dict[str, Any]] = {}
    for n in SIZES:
        sizes[str(n)] = {
            **summary(runs[n]),
            "frames": len(frames[n]),
            "raw_websockets": summary(raw_runs[n]),
            "ratio_to_raw": round(statistics.median(runs[n]) / statistics.median(raw_runs[n]), 2),
            "rounds_s_trellis_raw": [
                [round(t, 3), round(r, 3)] for t, r in zip(runs[n], raw_runs[n], strict=True)
            ],
            "core_in_process": summary(core_runs[n]),
        }
    small, large = (statistics.median(runs[n]) for n in SIZES)
    return {
        "turns": sizes,
        "growth": round(large / small, 2),
        "size_ratio": SIZES[1] // SIZES[0],
        "target_s": LOAD_TARGET_S,
        "met": large < LOAD_TARGET_S,
    }


async def bench_throughput(tmp: Path, rounds: int) -> dict[str, Any]:
    config_text = long_reply_config(tmp)
    with serving(tmp, name="stream", config=config_text) as server:
        _, frames = await streamed_reply(server.url, server.root)  # also the raw sender's frames
        config_file = tmp / "core-config.toml"
        config_file.write_text(config_text, encoding="utf-8")
        core = AcpOptions(
            store_path=tmp / "core-stream.sqlite",
            roots=[server.root],
            config=load_config(server.root, user_file=config_file),
        )
        async with raw_sender(frames, tmp / "frames.json") as port:
            trellis_rates, raw_rates, core_rates = [], [], []
            for _ in range(rounds):
                elapsed, sent = await streamed_reply(server.url, server.root)
                trellis_rates.append(len(sent) / elapsed)
                elapsed, count = await raw_stream(port)
                raw_rates.append(count / elapsed)
                core_rates.append(await core_stream(core, server.root))
    trellis_rate = statistics.median(trellis_rates)
    raw_rate = statistics.median(raw_rates)
    return {
        "frames": len(frames),
        "trellis_updates_per_s": round(trellis_rate),
        "raw_websockets_frames_per_s": round(raw_rate),
        "core_in_process_updates_per_s": round(statistics.median(core_rates)),
        "ratio": round(trellis_rate / raw_rate, 3),
        "rounds_per_s_trellis_raw": [
            [round(t), round(r)] for t, r in zip(trellis_rates, raw_rates, strict=True)
        ],
        "target_ratio": THROUGHPUT_TARGET,
        "met": trellis_rate / raw_rate >= THROUGHPUT_TARGET,
    }


async def run(rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        return {
            "rounds": rounds,
            "session_load": await bench_load(tmp, rounds),
            "update_throughput": await bench_throughput(tmp, rounds),
        }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.acp")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args.rounds)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
