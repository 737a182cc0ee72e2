"""Benchmark: ACP over WebSocket against `trellis serve` running as its own process; prints JSON.

Run as `python -m tests.bench.acp [--rounds N] [--only load|throughput] [--before DIR]`. Two measures, each with its
baseline in the same run, in interleaved rounds:

- `session/load` of stored sessions of 1,000 and 10,000 turns (a tool call and two steps per turn):
  the time from sending the request to its answer and the frames received before it, beside
  a raw `websockets` server sending the very same frames (`raw_websockets`). Target: 10,000 turns
  under 2 s, and linear in size (10x the turns, at most about 10x the time). Each round loads each
  size once on a fresh connection, smaller first, then has the raw sender send its frames.
  `agent_ready`: the time from the request to the answer of a `session/set_config_option` sent
  right after the load's answer, which waits for the session's Agent (opened after the answer, so
  that a prompt can run): what a client that loads and then prompts at once waits in all.
  `server_cpu_to_answer`: the CPU seconds `trellis serve` spent from the cheap client's request to
  its answer (Linux's /proc), a figure that other work on a shared machine moves far less than wall
  time. With `--before DIR` (an earlier source tree, e.g. a `git worktree` of main, with its own
  `tests/acp/long_session.py`) that tree's `trellis serve` loads the same sessions, stored by that
  tree's own code (its events may lack a field this tree writes), in each round too, with both
  clients (`before` beside each size): a change judged in one run. The throughput measure does the
  same with the streamed reply (`before`: the earlier server's rates, each round's beside this
  tree's).
- Update throughput of one streamed reply (the scripted model streaming 20,000 words with no delay):
  `session/update` frames per second from the prompt to its answer, beside a raw `websockets`
  server (another process, the same settings: no compression) sending the very same frames as fast
  as it can. Target: at least 50% of the raw sender. The same reply over the streamable HTTP
  transport (HTTP/2, the session's SSE stream, httpx as the client) is measured in the same rounds
  (`http`), each figure beside the WebSocket's and the raw sender's. The raw sender's frames are one per delta
  (checked); a client that falls behind may get deltas joined (fewer frames, the same text), so
  each round's frame count is reported beside the rate, which counts frames and so never favours
  a joined round.

Two clients read every figure, each against Trellis and against the raw sender:
- `decoding`: a plain `websockets` connection that takes every frame with `recv()` and decodes it
  with `json.loads`, as a real client would. For tens of thousands of frames it costs about as
  much per frame as the server, so its times measure the client as much as the server.
- `cheap` (`tests/bench/frame_reader.py`): finds the frames by their headers in large reads and
  decodes only the answers; what the server itself takes. The targets are judged on it, and the
  decoding client's figures stay beside them.
`tests/acp/` drives the same server with the `acp` package's client. A further baseline,
`core_in_process`, runs the same requests on a connection (`app.acp.connection`: the protocol and
its handlers) in this process with no socket at all (each message decoded): what the core and the
engine cost alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from app.acp.core import AcpOptions, AcpServer
from engine.config import load_config
from tests.acp.http_peer import h2_client, http_url, post, sse
from tests.acp.http_peer import initialized as http_initialized
from tests.acp.http_peer import rpc as http_rpc
from tests.acp.long_session import store_session
from tests.acp.ws_peer import ServeProcess, bearer, initialized, raw_socket, request, serving
from tests.bench.frame_reader import FrameReader

SIZES = (1_000, 10_000)
LOAD_TARGET_S = 2.0
THROUGHPUT_TARGET = 0.5
STREAM_WORDS = 20_000
MAX_FRAME = 16 * 1024 * 1024
MEASURES = ("load", "throughput")


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
    answer, frames = await decoded_until_answer(ws, ident)
    return time.perf_counter() - start, answer, frames


async def decoded_until_answer(
    ws: ClientConnection, ident: int
) -> tuple[dict[str, Any], list[str]]:
    """The answer to `ident`, each frame before it decoded on the way (and kept)."""
    frames: list[str] = []
    while True:
        frame = await ws.recv()
        assert isinstance(frame, str)
        message = json.loads(frame)
        if "method" not in message and message.get("id") == ident:
            return message, frames
        frames.append(frame)


def load_params(cwd: Path, session_id: str) -> dict[str, Any]:
    return {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}


async def timed_load(url: str, cwd: Path, session_id: str) -> tuple[float, list[str], str]:
    """Seconds from `session/load` to its answer (each frame decoded), the frames before
    it, and the answer's frame."""
    async with client(url) as ws:
        await initialized(ws)
        elapsed, answer, frames = await call(ws, 1, "session/load", load_params(cwd, session_id))
    # `modes`, or `{}` from an earlier tree (--before)
    assert isinstance(answer.get("result"), dict), answer
    return elapsed, frames, json.dumps(answer, separators=(",", ":"))


async def cheap_call(
    reader: FrameReader, ident: int, method: str, params: dict[str, Any]
) -> tuple[dict[str, Any], int]:
    await reader.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
    return await reader.until_answer(ident)


@dataclass(frozen=True, slots=True)
class CheapLoad:
    """One load with the cheap client: seconds to the answer and to the Agent, the frames before
    the answer, and the CPU seconds the server process spent from the request to the answer."""

    loaded: float
    ready: float
    frames: int
    server_cpu: float


def process_cpu(pid: int) -> float:
    """CPU seconds (user and system) process `pid` has used so far (Linux: /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def cheap_load(server: ServeProcess, session_id: str) -> CheapLoad:
    """With the cheap client: seconds from `session/load` to its answer, then to the answer
    of a `session/set_config_option` sent right after it (which waits for the Agent), the frames
    before the load's answer, and the server's CPU seconds up to the answer. The CPU counter is
    read on either side of the timed request, so it may take in a few milliseconds of the
    Agent's opening, which starts with the answer; it moves in clock ticks (10 ms)."""
    reader = await FrameReader.connect(server.url, bearer())
    pid, cwd = server.process.pid, server.root
    try:
        await cheap_call(reader, 0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        cpu = await asyncio.to_thread(process_cpu, pid)
        start = time.perf_counter()
        answer, frames = await cheap_call(reader, 1, "session/load", load_params(cwd, session_id))
        loaded = time.perf_counter() - start
        cpu = await asyncio.to_thread(process_cpu, pid) - cpu
        # `modes`, or `{}` from an earlier tree (--before)
        assert isinstance(answer.get("result"), dict), answer
        option = {"sessionId": session_id, "configId": "model", "value": "scripted"}
        answer, _ = await cheap_call(reader, 2, "session/set_config_option", option)
        assert "result" in answer, answer
        return CheapLoad(loaded, time.perf_counter() - start, frames, cpu)
    finally:
        await reader.aclose()


async def streamed_reply(url: str, cwd: Path) -> tuple[float, list[str]]:
    """Seconds from `session/prompt` to its answer, and the `session/update` frames of the reply."""
    async with client(url) as ws:
        await initialized(ws)
        _, opened, _ = await call(ws, 1, "session/new", {"cwd": str(cwd), "mcpServers": []})
        params = prompt_params(opened["result"]["sessionId"])
        elapsed, answer, frames = await call(ws, 2, "session/prompt", params)
    assert answer["result"]["stopReason"] == "end_turn", answer
    return elapsed, [f for f in frames if '"session/update"' in f]


async def counted_reply(url: str, cwd: Path) -> tuple[float, int]:
    elapsed, frames = await streamed_reply(url, cwd)
    return elapsed, len(frames)


async def cheap_streamed_reply(url: str, cwd: Path) -> tuple[float, int]:
    """`streamed_reply` with the cheap client: seconds, and the frames before the answer."""
    reader = await FrameReader.connect(url, bearer())
    try:
        await cheap_call(reader, 0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        opened, _ = await cheap_call(reader, 1, "session/new", {"cwd": str(cwd), "mcpServers": []})
        start = time.perf_counter()
        answer, frames = await cheap_call(
            reader, 2, "session/prompt", prompt_params(opened["result"]["sessionId"])
        )
        assert answer["result"]["stopReason"] == "end_turn", answer
        return time.perf_counter() - start, frames
    finally:
        await reader.aclose()


async def http_streamed_reply(url: str, cwd: Path, *, decode: bool) -> tuple[float, int]:
    """Over streamable HTTP (HTTP/2): seconds from the `session/prompt` POST to its answer on the
    session's stream, and the `session/update` events before it; each event decoded (`decode`)
    or, as the cheap client does, only split apart."""
    async with h2_client() as http:
        connection = await http_initialized(http, url)
        async with sse(http, url, connection) as connection_stream:
            params = {"cwd": str(cwd), "mcpServers": []}
            await post(http, url, http_rpc(1, "session/new", params), connection_id=connection)
            opened, _ = await connection_stream.until_answer(1)
            session = opened["result"]["sessionId"]
            async with sse(http, url, connection, session) as stream:
                start = time.perf_counter()
                prompt = http_rpc(2, "session/prompt", prompt_params(session))
                await post(http, url, prompt, connection_id=connection, session_id=session)
                if decode:
                    answer, before = await stream.until_answer(2)
                    assert answer["result"]["stopReason"] == "end_turn", answer
                    sent = sum(1 for m in before if m.get("method") == "session/update")
                else:
                    sent = await cheap_sse_until_answer(stream.response, 2)
                elapsed = time.perf_counter() - start
        await http.delete(url, headers={**bearer(), "Acp-Connection-Id": connection})
    return elapsed, sent


async def cheap_sse_until_answer(response: httpx.Response, ident: int) -> int:
    """The SSE events before the answer to `ident`, found without decoding them."""
    answer = b'data: {"jsonrpc":"2.0","id":%d,' % ident
    count, pending = 0, b""
    async for chunk in response.aiter_raw():
        complete, separator, pending = (pending + chunk).rpartition(b"\n\n")
        if not separator:
            pending = complete
            continue
        for event in complete.split(b"\n\n"):
            if event.startswith(answer):
                return count
            count += event.startswith(b"data: ")
    raise AssertionError("the stream ended before the answer")


def prompt_params(session_id: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}


RAW_SENDER = """
import asyncio, json, sys
from websockets.asyncio.server import serve

frames = json.load(open(sys.argv[1]))

async def send_all(ws):
    await ws.recv()  # the client's go
    for frame in frames:  # the last one is the answer to the client's request 1
        await ws.send(frame)

async def main():
    async with serve(send_all, "127.0.0.1", 0, compression=None, max_size=2**24) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.get_running_loop().create_future()

asyncio.run(main())
"""


async def raw_stream(port: int) -> tuple[float, int]:
    """Seconds for the raw sender's frames, decoded as the Trellis client decodes them, and how
    many came before the answer."""
    async with connect(f"ws://127.0.0.1:{port}", max_size=MAX_FRAME, compression=None) as ws:
        start = time.perf_counter()
        await ws.send("go")
        _, frames = await decoded_until_answer(ws, 1)
        return time.perf_counter() - start, len(frames)


async def cheap_raw_stream(port: int) -> tuple[float, int]:
    """`raw_stream` with the cheap client."""
    reader = await FrameReader.connect(f"ws://127.0.0.1:{port}/", {})
    try:
        start = time.perf_counter()
        await reader.send({"go": True})
        _, count = await reader.until_answer(1)
        return time.perf_counter() - start, count
    finally:
        await reader.aclose()


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

    async def aclose(self) -> None:
        await self._connection.aclose()


async def core_load(options: AcpOptions, cwd: Path, session_id: str) -> float:
    server = AcpServer(options)
    client = CoreClient(server)
    try:
        await client.call("initialize", {"protocolVersion": 1})
        params = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
        elapsed, answer, _ = await client.call("session/load", params)
    finally:
        await client.aclose()
        await server.aclose()
    # the load's answer: its `modes`
    assert isinstance(answer.get("result"), dict), answer
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
        await client.aclose()
        await server.aclose()
    return sent / elapsed


def summary(times: list[float]) -> dict[str, float]:
    return {
        "median_s": round(statistics.median(times), 3),
        "first_s": round(times[0], 3),
        "max_s": round(max(times), 3),
    }


def rate(counts: list[float], times: list[float]) -> float:
    return statistics.median(c / t for c, t in zip(counts, times, strict=True))


async def bench_load(tmp: Path, rounds: int, before: Path | None = None) -> dict[str, Any]:
    with serving(tmp, name="load") as server, ExitStack() as earlier:
        ids = {n: await store_session(server.db, server.root, n) for n in SIZES}
        old, old_ids = None, ids
        if before is not None:  # the earlier code's own server, on the same sessions it stored
            home = tmp / "before" / "home"
            await asyncio.to_thread(home.mkdir, parents=True)
            old_ids = await stored_by(before, home / "sessions.sqlite", server.root)
            old = earlier.enter_context(
                serving(tmp, name="before", root=server.root, env={"PYTHONPATH": str(before)})
            )
        copy = tmp / "core-sessions.sqlite"  # the in-process core's own copy: no lease to share
        await asyncio.to_thread(sqlite_copy, server.db, copy)
        core = AcpOptions(store_path=copy, roots=[server.root])
        runs = {n: Runs() for n in SIZES}
        frames: dict[int, list[str]] = {}
        for n in SIZES:  # the frames the raw sender sends: the very ones Trellis sends
            _, frames[n], answer = await timed_load(server.url, server.root, ids[n])
            frames[n].append(answer)
        async with (
            raw_sender(frames[SIZES[0]], tmp / "load-small.json") as small_port,
            raw_sender(frames[SIZES[1]], tmp / "load-large.json") as large_port,
        ):
            ports = dict(zip(SIZES, (small_port, large_port), strict=True))
            for round_ in range(rounds):
                for n in SIZES:
                    run = runs[n]
                    # with an earlier tree, each measure runs on both servers, in turn first
                    sides = [
                        Side(server, ids, run.trellis, run.cheap_trellis, run.ready, run.server_cpu)
                    ]
                    if old is not None:
                        earlier_side = Side(
                            old,
                            old_ids,
                            run.before,
                            run.cheap_before,
                            run.ready_before,
                            run.server_cpu_before,
                        )
                        sides = [earlier_side, *sides] if round_ % 2 else [*sides, earlier_side]
                    for side in sides:
                        loaded = side.ids[n]
                        side.decoding.append((await timed_load(side.url, side.root, loaded))[0])
                    run.raw.append((await raw_stream(ports[n]))[0])
                    for side in sides:
                        cheap = await cheap_load(side.served, side.ids[n])
                        side.cheap.append(cheap.loaded)
                        side.ready.append(cheap.ready)
                        side.cpu.append(cheap.server_cpu)
                    run.cheap_raw.append((await cheap_raw_stream(ports[n]))[0])
                    run.core.append(await core_load(core, server.root, ids[n]))
    sizes: dict[str, dict[str, Any]] = {}
    for n in SIZES:
        run = runs[n]
        sizes[str(n)] = {
            "frames": len(frames[n]) - 1,
            "cheap": {
                **summary(run.cheap_trellis),
                "raw_websockets": summary(run.cheap_raw),
                "ratio_to_raw": ratio(run.cheap_trellis, run.cheap_raw),
                "rounds_s_trellis_raw": pairs(run.cheap_trellis, run.cheap_raw),
            },
            "decoding": {
                **summary(run.trellis),
                "raw_websockets": summary(run.raw),
                "ratio_to_raw": ratio(run.trellis, run.raw),
                "rounds_s_trellis_raw": pairs(run.trellis, run.raw),
            },
            "agent_ready": summary(run.ready),
            "server_cpu_to_answer": summary(run.server_cpu),
            "core_in_process": summary(run.core),
        }
        if old is not None:
            sizes[str(n)]["before"] = {
                "cheap": {**summary(run.cheap_before), "rounds_s": rounded(run.cheap_before)},
                "decoding": {**summary(run.before), "rounds_s": rounded(run.before)},
                "agent_ready": summary(run.ready_before),
                "server_cpu_to_answer": summary(run.server_cpu_before),
            }
    small, large = (statistics.median(runs[n].cheap_trellis) for n in SIZES)
    decoded_small, decoded_large = (statistics.median(runs[n].trellis) for n in SIZES)
    growth_before = {}
    if old is not None:
        earlier_small, earlier_large = (statistics.median(runs[n].cheap_before) for n in SIZES)
        growth_before = {"growth_cheap_before": round(earlier_large / earlier_small, 2)}
    return {
        "turns": sizes,
        "growth_cheap": round(large / small, 2),
        "growth_decoding": round(decoded_large / decoded_small, 2),
        **growth_before,
        "size_ratio": SIZES[1] // SIZES[0],
        "target_s": LOAD_TARGET_S,
        "met": large < LOAD_TARGET_S,
        "judged_on": "cheap client, time to the answer",
    }


@dataclass(slots=True)
class Runs:
    """One size's seconds, a list per measure, a value per round."""

    trellis: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)
    cheap_trellis: list[float] = field(default_factory=list)
    cheap_raw: list[float] = field(default_factory=list)
    ready: list[float] = field(default_factory=list)
    core: list[float] = field(default_factory=list)
    server_cpu: list[float] = field(default_factory=list)
    before: list[float] = field(default_factory=list)
    cheap_before: list[float] = field(default_factory=list)
    ready_before: list[float] = field(default_factory=list)
    server_cpu_before: list[float] = field(default_factory=list)


def ratio(trellis: list[float], raw: list[float]) -> float:
    return round(statistics.median(trellis) / statistics.median(raw), 2)


@dataclass(frozen=True, slots=True)
class Side:
    """One server's lists of a size's figures, to which each round adds one value each."""

    served: ServeProcess
    ids: dict[int, str]
    """The id of the stored session of each size, in this server's store."""
    decoding: list[float]
    cheap: list[float]
    ready: list[float]
    cpu: list[float]

    @property
    def url(self) -> str:
        return self.served.url

    @property
    def root(self) -> Path:
        return self.served.root


def rounded(times: list[float]) -> list[float]:
    return [round(t, 3) for t in times]


def pairs(trellis: list[float], raw: list[float]) -> list[list[float]]:
    return [[round(t, 3), round(r, 3)] for t, r in zip(trellis, raw, strict=True)]


async def stored_by(tree: Path, db: Path, cwd: Path) -> dict[int, str]:
    """The sessions of each size stored in `db` by the source tree `tree`'s own code (an earlier
    tree's events may lack a field this tree writes, and its store refuses them): their ids."""
    code = (
        "import asyncio, json, sys\n"
        "from pathlib import Path\n"
        "from tests.acp.long_session import store_session\n"
        "async def main():\n"
        "    db, cwd = Path(sys.argv[1]), Path(sys.argv[2])\n"
        "    ids = {n: await store_session(db, cwd, n) for n in map(int, sys.argv[3:])}\n"
        "    print(json.dumps(ids))\n"
        "asyncio.run(main())\n"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        str(db),
        str(cwd),
        *map(str, SIZES),
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"{tree} could not store the sessions (exit {process.returncode})")
    return {int(n): ident for n, ident in json.loads(out).items()}


def sqlite_copy(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database, what its write-ahead log holds included."""
    with closing(sqlite3.connect(source)) as original, closing(sqlite3.connect(target)) as copy:
        original.backup(copy)


async def bench_throughput(tmp: Path, rounds: int, before: Path | None = None) -> dict[str, Any]:
    config_text = long_reply_config(tmp)
    with serving(tmp, name="stream", config=config_text) as server, ExitStack() as earlier:
        old = None
        if before is not None:  # the earlier code's own server, streaming the same reply
            env = {"PYTHONPATH": str(before)}
            old = earlier.enter_context(
                serving(tmp, name="stream-before", config=config_text, root=server.root, env=env)
            )
        _, frames = await streamed_reply(server.url, server.root)  # also the raw sender's frames
        # the raw sender's frames must be one per delta: had this reply gone out with deltas
        # joined (a client that fell behind), the baseline would send less than Trellis streams
        assert len(frames) > STREAM_WORDS, f"{len(frames)} frames for {STREAM_WORDS} deltas"
        answer = {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}
        config_file = tmp / "core-config.toml"
        config_file.write_text(config_text, encoding="utf-8")
        core = AcpOptions(
            store_path=tmp / "core-stream.sqlite",
            roots=[server.root],
            config=load_config(server.root, user_file=config_file),
        )
        http_url_ = http_url(server)
        names = (
            *("trellis", "raw", "cheap", "cheap_raw", "before", "cheap_before"),
            *("http", "cheap_http"),
        )
        counts: dict[str, list[float]] = {k: [] for k in names}
        times: dict[str, list[float]] = {k: [] for k in counts}
        core_rates = []
        async with raw_sender([*frames, json.dumps(answer)], tmp / "frames.json") as port:
            for round_ in range(rounds):
                measured = [
                    ("trellis", counted_reply(server.url, server.root)),
                    ("raw", raw_stream(port)),
                    ("cheap", cheap_streamed_reply(server.url, server.root)),
                    ("cheap_raw", cheap_raw_stream(port)),
                    ("http", http_streamed_reply(http_url_, server.root, decode=True)),
                    ("cheap_http", http_streamed_reply(http_url_, server.root, decode=False)),
                ]
                if old is not None:  # each beside its twin from this tree, in turn first
                    decoding = [measured[0], ("before", counted_reply(old.url, old.root))]
                    cheap = [measured[2], ("cheap_before", cheap_streamed_reply(old.url, old.root))]
                    if round_ % 2:
                        decoding.reverse()
                        cheap.reverse()
                    measured = [*decoding, measured[1], *cheap, *measured[3:]]
                for name, measure in measured:
                    elapsed, sent = await measure
                    times[name].append(elapsed)
                    counts[name].append(sent)
                core_rates.append(await core_stream(core, server.root))
    rates = {name: rate(counts[name], times[name]) for name in counts if counts[name]}
    cheap_ratio = rates["cheap"] / rates["cheap_raw"]
    earlier_figures = {}

    def now_and_before(now: str, earlier: str) -> list[list[int]]:
        """Each round's rate of this tree's server beside the earlier tree's."""
        return [
            [round(c / t), round(bc / bt)]
            for c, t, bc, bt in zip(
                counts[now], times[now], counts[earlier], times[earlier], strict=True
            )
        ]

    if before is not None:
        earlier_figures = {
            "before": {
                "cheap_updates_per_s": round(rates["cheap_before"]),
                "cheap_ratio": round(rates["cheap_before"] / rates["cheap_raw"], 3),
                "decoding_updates_per_s": round(rates["before"]),
                "decoding_ratio": round(rates["before"] / rates["raw"], 3),
                "rounds_per_s_cheap_now_before": now_and_before("cheap", "cheap_before"),
                "rounds_per_s_decoding_now_before": now_and_before("trellis", "before"),
            }
        }
    return {
        "frames": len(frames),
        "cheap": {
            "trellis_updates_per_s": round(rates["cheap"]),
            "raw_websockets_frames_per_s": round(rates["cheap_raw"]),
            "ratio": round(cheap_ratio, 3),
            "trellis_frames_per_round": [round(c) for c in counts["cheap"]],
        },
        "decoding": {
            "trellis_updates_per_s": round(rates["trellis"]),
            "raw_websockets_frames_per_s": round(rates["raw"]),
            "ratio": round(rates["trellis"] / rates["raw"], 3),
            "trellis_frames_per_round": [round(c) for c in counts["trellis"]],
            "rounds_per_s_trellis_raw": [
                [round(c / t), round(rc / rt)]
                for c, t, rc, rt in zip(
                    counts["trellis"], times["trellis"], counts["raw"], times["raw"], strict=True
                )
            ],
        },
        "http": {
            "transport": "streamable HTTP over HTTP/2 (httpx client), the session's SSE stream",
            "cheap": {
                "trellis_updates_per_s": round(rates["cheap_http"]),
                "websocket_updates_per_s": round(rates["cheap"]),
                "raw_websockets_frames_per_s": round(rates["cheap_raw"]),
                "ratio_to_websocket": round(rates["cheap_http"] / rates["cheap"], 3),
                "ratio_to_raw": round(rates["cheap_http"] / rates["cheap_raw"], 3),
                "trellis_events_per_round": [round(c) for c in counts["cheap_http"]],
            },
            "decoding": {
                "trellis_updates_per_s": round(rates["http"]),
                "websocket_updates_per_s": round(rates["trellis"]),
                "raw_websockets_frames_per_s": round(rates["raw"]),
                "ratio_to_websocket": round(rates["http"] / rates["trellis"], 3),
                "ratio_to_raw": round(rates["http"] / rates["raw"], 3),
                "rounds_per_s_http_websocket": [
                    [round(c / t), round(wc / wt)]
                    for c, t, wc, wt in zip(
                        counts["http"],
                        times["http"],
                        counts["trellis"],
                        times["trellis"],
                        strict=True,
                    )
                ],
            },
        },
        "core_in_process_updates_per_s": round(statistics.median(core_rates)),
        **earlier_figures,
        "target_ratio": THROUGHPUT_TARGET,
        "met": cheap_ratio >= THROUGHPUT_TARGET
        and rates["trellis"] / rates["raw"] >= THROUGHPUT_TARGET,
    }


async def run(
    rounds: int, measures: Sequence[str] = MEASURES, before: Path | None = None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        figures: dict[str, Any] = {"rounds": rounds}
        if "load" in measures:
            figures["session_load"] = await bench_load(tmp, rounds, before)
        if "throughput" in measures:
            figures["update_throughput"] = await bench_throughput(tmp, rounds, before)
        return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.acp")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--only", choices=MEASURES, help="run one measure (default: both, load first)"
    )
    parser.add_argument(
        "--before",
        type=Path,
        metavar="DIR",
        help="an earlier source tree (e.g. a `git archive` of main): its `trellis serve` loads "
        "the same sessions and streams the same reply in the same rounds (`before` beside each)",
    )
    args = parser.parse_args(argv)
    measures = (args.only,) if args.only else MEASURES
    before = args.before.resolve() if args.before is not None else None
    print(json.dumps(asyncio.run(run(args.rounds, measures, before)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
