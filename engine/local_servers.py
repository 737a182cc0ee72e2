"""OpenAI-compatible servers on this machine (Ollama, LM Studio, llama.cpp, vLLM), and what they serve.

A server is found by asking its `/v1/models` on loopback with a short deadline, all at once: one
that refuses, is silent or answers with something other than a model list is simply absent. Nothing
but that GET is sent, and nothing is sent to a server until a model of it is chosen. `httpx` is
imported in a worker thread when the first question is asked, so a console that asks after its
first paint never pays for it before.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.config import ConfigError

if TYPE_CHECKING:
    import httpx

SERVERS_ENV = "TRELLIS_LOCAL_SERVERS"
"""Names the servers to ask instead of the well-known ones: `NAME=PORT` pairs on 127.0.0.1,
separated by commas (`ollama=11500,vllm=8001`); empty, none is asked."""

DEADLINE = 1.0
"""Seconds a server has to answer a background look (the console's start, the picker): nothing
waits on it, and a server on a busy machine (a model loading) answers late."""
NAMED_DEADLINE = 3.0
"""Seconds a server has to answer when the model to run is one of its own (a `default_model` or
`--model` that names it): the run cannot start without it."""
MAX_ANSWER_BYTES = 1 << 20
"""A model list longer than this is not a model list (another service answering on the port)."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalServer:
    """A server that may run here; its models are named `NAME/MODEL` (`ollama/qwen3:8b`)."""

    name: str
    label: str
    port: int
    host: str = "127.0.0.1"
    at_start: bool = True
    """Asked when the console starts; the others (ports other services often use) only when the
    model picker opens or `trellis models` runs."""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"http://{self.address}/v1"

    def describe(self) -> str:
        """`ollama at 127.0.0.1:11434`: where an entry of this server comes from."""
        return f"{self.name} at {self.address}"


WELL_KNOWN: tuple[LocalServer, ...] = (
    LocalServer(name="ollama", label="Ollama", port=11434),
    LocalServer(name="lmstudio", label="LM Studio", port=1234),
    LocalServer(name="llamacpp", label="llama.cpp", port=8080, at_start=False),
    LocalServer(name="vllm", label="vLLM", port=8000, at_start=False),
)
"""The servers asked by default, on their default ports."""


def local_servers(environ: Mapping[str, str] | None = None) -> tuple[LocalServer, ...]:
    """The servers to ask: those `TRELLIS_LOCAL_SERVERS` names when it is set, else `WELL_KNOWN`.

    Raises `ConfigError` for a value that is not `NAME=PORT` pairs."""
    value = (os.environ if environ is None else environ).get(SERVERS_ENV)
    if value is None:
        return WELL_KNOWN
    labels = {server.name: server.label for server in WELL_KNOWN}
    servers: list[LocalServer] = []
    for pair in filter(None, (part.strip() for part in value.split(","))):
        name, _, port = pair.partition("=")
        name = name.strip()
        if not _NAME.match(name) or not port.strip().isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(
                f"{SERVERS_ENV}: {pair!r} is not NAME=PORT (a lowercase name, a port 1-65535)"
            )
        if any(server.name == name for server in servers):
            raise ConfigError(f"{SERVERS_ENV}: {name!r} is named twice")
        servers.append(LocalServer(name=name, label=labels.get(name, name), port=int(port)))
    return tuple(servers)


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalModel:
    """One model a server lists; its window when the server says (vLLM does, Ollama does not)."""

    id: str
    context_window: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerAnswer:
    """What one server said: its models, or why it gave none (`problem`)."""

    server: LocalServer
    models: tuple[LocalModel, ...] = ()
    problem: str | None = None

    def describe(self) -> str:
        """`ollama at 127.0.0.1:11434: 3 models` or `... : not running (connection refused)`."""
        if self.problem is not None:
            return f"{self.server.describe()}: {self.problem}"
        count = len(self.models)
        return f"{self.server.describe()}: {count} model{'' if count == 1 else 's'}"


async def ask(
    servers: Sequence[LocalServer], *, deadline: float = DEADLINE
) -> tuple[ServerAnswer, ...]:
    """Ask every server's `/v1/models` at once, in their order; each has `deadline` seconds.

    Never raises for what a server does; cancelling the call cancels every question."""
    if not servers:
        return ()
    await asyncio.to_thread(_import_httpx)
    import httpx

    # no proxy from the environment: these addresses are this machine's
    async with httpx.AsyncClient(trust_env=False, timeout=deadline) as client:
        return tuple(
            await asyncio.gather(*(_ask_one(client, server, deadline) for server in servers))
        )


def _import_httpx() -> None:
    import httpx  # noqa: F401  (loaded off the event loop: its imports take long)


async def _ask_one(client: httpx.AsyncClient, server: LocalServer, deadline: float) -> ServerAnswer:
    import httpx

    body = bytearray()
    try:
        async with asyncio.timeout(deadline):
            async with client.stream("GET", f"{server.base_url}/models") as response:
                if response.status_code != 200:
                    return ServerAnswer(
                        server=server, problem=f"answered HTTP {response.status_code}"
                    )
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_ANSWER_BYTES:
                        return ServerAnswer(server=server, problem="answered with no model list")
    except TimeoutError:
        return ServerAnswer(server=server, problem=f"no answer within {deadline:g} s")
    except httpx.ConnectError:
        return ServerAnswer(server=server, problem="not running (connection refused)")
    except httpx.HTTPError as exc:
        return ServerAnswer(server=server, problem=f"no answer ({type(exc).__name__})")
    models = model_list(bytes(body))
    if models is None:
        return ServerAnswer(server=server, problem="answered with no model list")
    return ServerAnswer(server=server, models=models)


def model_list(body: bytes) -> tuple[LocalModel, ...] | None:
    """The chat models of an OpenAI `/v1/models` answer (`{"data": [{"id": ...}, ...]}`); None
    when it is not one. Embedding models (an id that says `embed`) are left out: they cannot chat."""
    try:
        answer = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        return None
    models: list[LocalModel] = []
    for item in data:
        if not isinstance(item, dict):
            continue
        model_id = item.get("id")
        if not isinstance(model_id, str) or not model_id or "embed" in model_id.lower():
            continue
        models.append(LocalModel(id=model_id, context_window=_window(item)))
    return tuple(models)


def _window(item: Mapping[str, object]) -> int | None:
    """The context the server runs the model with, when it says: vLLM's `max_model_len`, or a
    `context_length` as some servers give it."""
    for key in ("max_model_len", "context_length"):
        value = item.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
