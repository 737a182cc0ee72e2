"""The TOML configuration (docs/ARCHITECTURE.md, "Configuration and trust"): two layers, validated,
explained.

The user-level file (`TRELLIS_CONFIG`, else the platform's user config directory) is read first, then
the project's `.trellis/config.toml`, which wins key by key: tables merge (each `[models.NAME]` entry
per key), arrays such as `[[areas]]` and `[[mcp_servers]]` are replaced whole. Every error names the
file, the dotted key and the problem. With no file at all the result is valid and uses the built-in
scripted model, so the console works out of the box.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from engine.errors import TrellisError
from engine.gateway.cache_breakpoints import DEFAULT_MIN_TOKENS as DEFAULT_CACHE_MIN_TOKENS
from engine.gateway.deadlines import (
    DEFAULT_FIRST_EVENT_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
)
from engine.paths import CONFIG_ENV, project_config_file, user_config_file
from engine.privacy import PrivacyClass

if TYPE_CHECKING:
    # imported where used: a workspace without a project file needs neither (start time)
    from engine.project_config import ProjectLayer, SkippedKey, UserBaseline
    from engine.trust import TrustStore

BUILTIN_MODEL = "scripted"
"""The entry that always exists, so a fresh install needs no configuration and no network."""
BUILTIN_ORIGIN = "built in"
USER_ORIGIN = "user config"
PROJECT_ORIGIN = "project config"

PrivacyClassName = Literal["public", "internal", "private", "restricted"]
Provider = Literal["scripted", "openai", "gemini", "anthropic"]

DEFAULT_SYSTEM_PROMPT = (
    "You are Trellis, a coding agent working in the user's workspace through the tools you are "
    "given. Read before you change anything, make the smallest change that does the job, and "
    "never invent file contents or command output: when you need to know, use a tool. Say plainly "
    "what you did, what you did not do, and why."
)

_UNKNOWN_DEFAULT_MODEL = "unknown_default_model"
_DUPLICATE_MCP_SERVER = "duplicate_mcp_server"
_AREA_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")

Loc = tuple[str | int, ...]


class ConfigError(TrellisError):
    """A configuration problem; the message names the file, the dotted key and what is wrong.

    `problems` holds one line per problem when validation found several; the attributes describe
    the first.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: Path | None = None,
        key: str = "",
        more: Sequence[str] = (),
    ) -> None:
        self.problem = problem
        self.file = file
        self.key = key
        where = ": ".join(part for part in (str(file) if file else "", key) if part)
        first = f"{where}: {problem}" if where else problem
        self.problems: tuple[str, ...] = (first, *more)
        super().__init__("\n".join(self.problems))


class _Section(BaseModel):
    # strict: TOML values are typed, so "32768" for a number or `true` for a count is a mistake;
    # built on first validation: with nothing configured, the defaults are built without it
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)
    # Empty lists and dicts are plain defaults, which pydantic copies for each instance, not
    # `default_factory=list`: building the defaults asks for each factory's signature, and
    # `list`'s is parsed from text by `tokenize`, an import and patterns start-up does without
    # (docs/DESIGN-NOTES.md, "Command line").


class ModelPrice(_Section):
    """What an endpoint charges, per million tokens, in `currency` (an ISO 4217 code): each step
    the provider reports tokens for records its cost (`step/end`'s `cost`). A step's cost is
    uncached input x `input` + cache reads x `cache_read` + cache writes x `cache_write` +
    output x `output`, over a million; a cache price left out is the input price (what those
    tokens would cost uncached), so a provider whose cache is free or cheaper is never
    undercharged by omission."""

    input: NonNegativeFloat
    """Per million input (prompt) tokens neither read from nor written to the prompt cache."""
    output: NonNegativeFloat
    """Per million output (reply) tokens."""
    cache_read: NonNegativeFloat | None = None
    """Per million input tokens read from the prompt cache; None: the input price."""
    cache_write: NonNegativeFloat | None = None
    """Per million input tokens written to the prompt cache; None: the input price."""
    currency: str = "USD"

    @field_validator("currency")
    @classmethod
    def _iso_4217(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Z]{3}", value):
            raise ValueError("must be an ISO 4217 currency code (three capital letters: USD, EUR)")
        return value

    def cost_of(
        self,
        *,
        input_tokens: int,
        cache_read_tokens: int,
        cache_write_tokens: int,
        output_tokens: int,
    ) -> float:
        """The cost of tokens in parts that do not overlap (`Usage`)."""
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        per_million = (
            input_tokens * self.input
            + cache_read_tokens * read
            + cache_write_tokens * write
            + output_tokens * self.output
        )
        return per_million / 1_000_000


class ModelEntry(_Section):
    """One named model endpoint. The key itself never lives here: `api_key_env` names its variable."""

    provider: Provider
    model: str = ""
    base_url: str = ""
    api_key_env: str = ""
    context_window: PositiveInt | None = None
    generation_window: PositiveInt | None = None
    egress: PrivacyClassName | None = None
    script: str = ""
    timeout: PositiveFloat = 120.0
    """Seconds to connect and send the request; the deadlines below bound the response."""
    first_event_timeout: PositiveFloat = DEFAULT_FIRST_EVENT_TIMEOUT
    """Seconds from the request to its first event (keep-alive comments do not count)."""
    idle_timeout: PositiveFloat = DEFAULT_IDLE_TIMEOUT
    """Seconds from one event to the next."""
    request_timeout: PositiveFloat = DEFAULT_REQUEST_TIMEOUT
    """Seconds for a whole response."""
    max_retries: NonNegativeInt = 3
    price: ModelPrice | None = None
    """What the endpoint charges; None: its steps record no cost."""
    cache_min_tokens: PositiveInt = DEFAULT_CACHE_MIN_TOKENS
    """The model's minimum cacheable prefix in tokens: an Anthropic request marks no prompt
    cache breakpoint before fewer (engine/gateway/cache_breakpoints.py)."""

    def api_key(self) -> str | None:
        """The key from the environment; None when no variable is named or it is unset or empty."""
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env) or None

    def effective_egress(self) -> PrivacyClass:
        """The highest class this endpoint may receive: declared, else by where the endpoint is.

        The scripted model and loopback endpoints never leave the machine, so they may receive
        everything; anything else defaults to internal.
        """
        if self.egress is not None:
            return PrivacyClass[self.egress]
        if self.provider == "scripted" or _is_loopback(self.base_url):
            return PrivacyClass.restricted
        return PrivacyClass.internal


def _is_loopback(base_url: str) -> bool:
    if not base_url:
        return False  # the provider's public endpoint
    host = urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname
    if host is None:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _inside_workspace(name: str) -> str:
    """An instruction file is read from the workspace root, so it must be a path inside it (the
    same rule `FloorBuilder` enforces, reported here with the file and the key)."""
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ValueError("must be a relative path inside the workspace root")
    return name


InstructionFile = Annotated[str, AfterValidator(_inside_workspace)]


class ContextConfig(_Section):
    """The orchestrator's governors and the privacy defaults (docs/spec/context-orchestration.md,
    "Governors")."""

    char_cap: PositiveInt | None = None
    """Characters one request may carry; unset: derived from the model entry's window (three
    characters a token, less the reply's reserve), else 96,000 (`engine.context.budget`)."""
    turn_window: int = 20  # 0 or less keeps no history group
    eviction_batch: PositiveInt | None = None
    """History groups dropped at once when the window or the cap is exceeded; unset: a quarter of
    `turn_window`. 1 slides the window one group at a time (every request then differs from the
    one before right after the floor, so a provider's prompt cache reads none of the history)."""
    instruction_files: list[InstructionFile] = Field(
        default_factory=lambda: ["AGENTS.md", "TRELLIS.md"]
    )
    instruction_max_bytes: PositiveInt = 32_768
    secret_patterns: list[str] = Field(
        default_factory=lambda: [".env*", "*.pem", "*.key", "id_*", "*credentials*"]
    )
    shell_class: PrivacyClassName = "internal"
    system_prompt: str = DEFAULT_SYSTEM_PROMPT

    def shell_privacy_class(self) -> PrivacyClass:
        """The label class of `run_shell` output."""
        return PrivacyClass[self.shell_class]


class McpServer(_Section):
    """An MCP server launched over stdio; its tools join the registry."""

    name: str = Field(min_length=1)
    command: str = Field(min_length=1)
    args: list[str] = []
    env: dict[str, str] = {}


class AreaEntry(_Section):
    """A user Area class registered by import path, with its constructor's keyword arguments."""

    path: str
    args: dict[str, Any] = {}

    @field_validator("path")
    @classmethod
    def _import_path(cls, value: str) -> str:
        if not _AREA_PATH.match(value):
            raise ValueError("must look like 'package.module:ClassName'")
        return value


def _absolute_root(value: str) -> str:
    if not Path(value).expanduser().is_absolute():
        raise ValueError("must be an absolute path (or start with ~)")
    return value


class ServeConfig(_Section):
    """`trellis serve`: loopback by default, and a token always required (on loopback too): from
    the variable `token_env` names when set, else generated in the data directory."""

    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8765, ge=0, le=65535)
    http_port: int | None = Field(default=None, ge=0, le=65535)
    """The streamable HTTP endpoint's port (`app.acp.http_transport`); none: `http_port_for`."""
    allowed_origins: list[str] = []
    """Browser origins (`scheme://host[:port]`) that may connect; empty: no web page may."""
    roots: list[Annotated[str, AfterValidator(_absolute_root)]] = []
    """Directories a session's cwd must lie under; empty: the directory `serve` started in."""
    token_env: str = "TRELLIS_SERVE_TOKEN"

    def root_paths(self, started_in: Path) -> list[Path]:
        """The roots, `~` expanded and resolved; `[started_in]` when none is configured."""
        roots = [Path(root).expanduser() for root in self.roots] or [started_in]
        return [root.resolve() for root in roots]

    def http_port_for(self, port: int) -> int:
        """The HTTP port beside the WebSocket `port`: the configured one, else the next port
        (any free one when `port` is 0 or the last)."""
        if self.http_port is not None:
            return self.http_port
        return port + 1 if 0 < port < 65535 else 0

    def token(self) -> str | None:
        """The bearer token from the environment; None when unset or empty."""
        if not self.token_env:
            return None
        return os.environ.get(self.token_env) or None


class AgentConfig(_Section):
    """Limits of the agent loop."""

    max_steps: PositiveInt = 50
    tool_timeout: PositiveFloat = 120.0
    max_tool_output: PositiveInt = 100_000
    allow_protected_writes: list[str] = []
    """Paths under `.trellis/`, or the user config, that write_file and edit_file may change:
    relative to the workspace, or absolute (`~` expanded). Protected paths are refused otherwise."""


class DiscoveryConfig(_Section):
    """Finding models without a config file (`engine.model_catalog`)."""

    local: bool = True
    """Ask OpenAI-compatible servers on loopback (Ollama, LM Studio, llama.cpp, vLLM) for their
    models; false, none is asked and a local server's model cannot be named."""


class ConsoleConfig(_Section):
    """The terminal console."""

    theme: str | None = None
    """A Textual theme by name (`textual-light`, `nord`, ...); the palette's "Theme" changes it
    for the session."""


class CheckpointsConfig(_Section):
    """Workspace checkpoints (`engine.checkpoints`): what is left out and past which size a
    workspace gets none."""

    enabled: bool = True
    exclude: list[str] = []
    """Patterns left out beside the workspace's `.gitignore` files and the defaults
    (`engine.checkpoints.settings.DEFAULT_EXCLUDES`), in `.gitignore` syntax."""
    max_file_bytes: PositiveInt = 1024 * 1024
    """A larger file is recorded as changed (path, size, hash) but not kept, so not restorable."""
    max_files: PositiveInt = 20_000
    max_bytes: PositiveInt = 512 * 1024 * 1024
    """Past either, checkpoints are off for that workspace."""


class TelemetryConfig(_Section):
    """Traces of every session to an OpenTelemetry collector (`app.telemetry`), following the
    GenAI semantic conventions; nothing is sent while `otlp_endpoint` is empty."""

    otlp_endpoint: str = ""
    """OTLP over HTTP: the collector's base URL (`http://127.0.0.1:4318`), to which `/v1/traces`
    is added, or the full traces URL. Headers (a vendor's key) come from
    `OTEL_EXPORTER_OTLP_HEADERS`, as every OpenTelemetry exporter reads them."""
    capture_content: bool = False
    """Send what was said (prompts, replies, tool arguments and results, the system text), as the
    conventions' opt-in attributes; off, spans carry names, ids, models and token counts only."""
    egress: PrivacyClassName | None = None
    """The highest class the endpoint may receive; content above it is redacted as exports
    redact it. Unset: `restricted` for a loopback endpoint, else `internal`."""
    timeout: PositiveFloat = 5.0
    """Seconds one export may take, and closing waits at most for what is still queued."""

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and (
            urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).hostname
        ):
            raise ValueError("must be an http:// or https:// URL (`http://127.0.0.1:4318`)")
        return value

    def traces_url(self) -> str:
        """Where spans are posted: the endpoint with `/v1/traces`, unless it names a path."""
        if urlsplit(self.otlp_endpoint).path.strip("/"):
            return self.otlp_endpoint
        return self.otlp_endpoint.rstrip("/") + "/v1/traces"

    def effective_egress(self) -> PrivacyClass:
        """As a model entry's: declared, else by where the endpoint is."""
        if self.egress is not None:
            return PrivacyClass[self.egress]
        return (
            PrivacyClass.restricted if _is_loopback(self.otlp_endpoint) else PrivacyClass.internal
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DetectedModel:
    """An entry no file defines, found in the environment or on a local server, and where."""

    entry: ModelEntry
    origin: str
    """`environment OPENAI_API_KEY`, `ollama at 127.0.0.1:11434`: shown wherever it is listed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Detection:
    """What validation knows beyond the files: the detected entries' names, and the names of the
    local servers whose models a `default_model` may name before they are found."""

    detected: frozenset[str] = frozenset()
    local_servers: frozenset[str] = frozenset()


def _builtin_models() -> dict[str, ModelEntry]:
    # the defaults below are the code's own values: constructed, not validated (nor built)
    return {BUILTIN_MODEL: ModelEntry.model_construct(provider="scripted")}


class Config(_Section):
    """The whole configuration; every section has its defaults."""

    default_model: str = BUILTIN_MODEL
    models: dict[str, ModelEntry] = Field(default_factory=_builtin_models)
    context: ContextConfig = Field(default_factory=ContextConfig.model_construct)
    mcp_servers: list[McpServer] = []
    areas: list[AreaEntry] = []
    serve: ServeConfig = Field(default_factory=ServeConfig.model_construct)
    agent: AgentConfig = Field(default_factory=AgentConfig.model_construct)
    console: ConsoleConfig = Field(default_factory=ConsoleConfig.model_construct)
    discovery: DiscoveryConfig = Field(default_factory=DiscoveryConfig.model_construct)
    checkpoints: CheckpointsConfig = Field(default_factory=CheckpointsConfig.model_construct)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig.model_construct)
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)
    _detected: frozenset[str] = PrivateAttr(default=frozenset())

    @field_validator("models", mode="before")
    @classmethod
    def _keep_builtin(cls, value: object) -> object:
        """The scripted entry exists unless overridden; a partial override keeps its provider."""
        if not isinstance(value, Mapping):
            return value
        entry = value.get(BUILTIN_MODEL)
        if entry is None:
            return {BUILTIN_MODEL: {"provider": "scripted"}, **value}
        if isinstance(entry, Mapping) and "provider" not in entry:
            return {**value, BUILTIN_MODEL: {"provider": "scripted", **entry}}
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _unique_servers(cls, value: list[McpServer]) -> list[McpServer]:
        seen: set[str] = set()
        for index, server in enumerate(value):
            if server.name in seen:
                raise PydanticCustomError(
                    _DUPLICATE_MCP_SERVER,
                    "another MCP server before it is named {name}; names must be unique",
                    {"name": repr(server.name), "index": index},
                )
            seen.add(server.name)
        return value

    @model_validator(mode="after")
    def _default_model_exists(self, info: ValidationInfo) -> Config:
        """The default names an entry: configured, detected, or a local server's model (found,
        or reported, when a session opens: `engine.model_catalog.with_named_local_models`)."""
        detection = info.context if isinstance(info.context, _Detection) else _Detection()
        name = self.default_model
        if name in self.models or name in detection.detected:
            return self
        server, slash, model = name.partition("/")
        if slash and model and server in detection.local_servers and self.discovery.local:
            return self
        known = ", ".join(sorted(self.models))
        if detection.detected:
            known += f"; detected: {', '.join(sorted(detection.detected))}"
        if slash and not self.discovery.local:
            known += "; local discovery is off ([discovery] local = false)"
        elif slash:
            servers = ", ".join(sorted(detection.local_servers)) or "none"
            known += f"; local servers (SERVER/MODEL): {servers}"
        raise PydanticCustomError(
            _UNKNOWN_DEFAULT_MODEL,
            "{name} names no model entry; configured: {configured}",
            {"name": repr(name), "configured": known},
        )

    def origin(self, name: str) -> str:
        """Where the entry `name` comes from: `user config`, `project config`, `built in`, or
        what detected it (`environment OPENAI_API_KEY`, `ollama at 127.0.0.1:11434`)."""
        found = self._origins.get(name)
        if found is not None:
            return found
        return BUILTIN_ORIGIN if name == BUILTIN_MODEL else "config"

    def with_models(self, found: Mapping[str, DetectedModel]) -> Config:
        """This configuration with the detected entries it does not define: a configured entry
        of the same name wins, whole. Itself when there is nothing new."""
        added = {name: model for name, model in found.items() if name not in self.models}
        if not added:
            return self
        models = {**self.models, **{name: model.entry for name, model in added.items()}}
        copy = self.model_copy(update={"models": models})
        copy._origins = {**self._origins, **{name: model.origin for name, model in added.items()}}
        copy._detected = self._detected | added.keys()
        return copy

    def detected(self, name: str) -> bool:
        """Whether the entry `name` was detected rather than configured."""
        return name in self._detected

    def _labelled(self, origins: Mapping[str, str]) -> Config:
        self._origins = {**self._origins, **origins}
        return self

    def model(self, name: str | None = None) -> tuple[str, ModelEntry]:
        """The named entry, or the default one for None; an unknown name lists the known ones."""
        chosen = self.default_model if name is None else name
        entry = self.models.get(chosen)
        if entry is None:
            configured = ", ".join(sorted(self.models))
            raise ConfigError(f"unknown model {chosen!r}; configured: {configured}")
        return chosen, entry


# --- loading --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedConfig:
    """The configuration, and what became of the project's file: a front end names the skipped
    keys, may ask the user to trust the project, and loads again."""

    config: Config
    project: ProjectLayer | None
    """None when no project file was read (none found, or it is the user-level file)."""


def config_files(cwd: Path, *, user_file: Path | None = None) -> list[Path]:
    """The layers that exist, lowest first: the user-level file, then the project's.

    A missing file is no layer, except one named by `TRELLIS_CONFIG`: naming a file that is not
    there is a mistake worth reporting.
    """
    user = _user_layer_file(user_file)
    project = _project_layer_file(cwd, user)
    return [file for file in (user, project) if file is not None]


def _user_layer_file(user_file: Path | None) -> Path | None:
    user = user_file if user_file is not None else user_config_file()
    if user.is_file():
        return user
    if user_file is None and os.environ.get(CONFIG_ENV):
        raise ConfigError(f"no such file (named by {CONFIG_ENV})", file=user)
    return None


def _project_layer_file(cwd: Path, user: Path | None) -> Path | None:
    project = project_config_file(cwd)
    if project is None or (user is not None and project.resolve() == user.resolve()):
        return None
    return project


def load_config(
    cwd: Path,
    *,
    user_file: Path | None = None,
    trust_project: bool = False,
    trust_store: TrustStore | None = None,
) -> Config:
    """Read, merge and validate the configuration seen from `cwd`; raises `ConfigError`.

    The project's file applies whole only when trusted (see `load_config_report`)."""
    return load_config_report(
        cwd, user_file=user_file, trust_project=trust_project, trust_store=trust_store
    ).config


def load_config_report(
    cwd: Path,
    *,
    user_file: Path | None = None,
    trust_project: bool = False,
    trust_store: TrustStore | None = None,
) -> LoadedConfig:
    """Read, merge and validate the configuration seen from `cwd`; raises `ConfigError`.

    The project's file applies whole when `trust_project` is given (one run) or the trust store
    holds its directory with the digest of exactly these bytes; otherwise only the keys
    `untrusted_subset` allows apply and the rest are reported on `LoadedConfig.project`.
    """
    merged: dict[str, Any] = {}
    provenance: dict[Loc, Path] = {}
    detected, detection = _detected()
    user = _user_layer_file(user_file)
    user_layer: dict[str, Any] = {}
    if user is not None:
        user_layer = _parse_layer(user, _read_file(user))
        _store_section(user_layer, user, project=False)
        _merge(merged, user_layer, user, provenance, ())
    report: ProjectLayer | None = None
    project = _project_layer_file(cwd, user)
    if project is not None:
        from engine.project_config import ProjectLayer, untrusted_subset
        from engine.trust import file_digest

        # one read: the bytes that are hashed for trust are the bytes that are parsed
        data = _read_file(project)
        layer = _parse_layer(project, data)
        _store_section(layer, project, project=True)
        directory = project.parent.parent
        digest = file_digest(data)
        trusted = trust_project or _trusted(trust_store, directory, digest)
        skipped: tuple[SkippedKey, ...] = ()
        if not trusted:
            layer, skipped = untrusted_subset(layer, _baseline(user_layer, detection))
        _merge(merged, layer, project, provenance, ())
        report = ProjectLayer(
            directory=directory, file=project, digest=digest, trusted=trusted, skipped=skipped
        )
    config = _validated(merged, provenance, user, detection)
    return LoadedConfig(config=config.with_models(detected), project=report)


def _detected() -> tuple[dict[str, DetectedModel], _Detection]:
    """The entries the environment's provider keys make, and what validation may take as named
    before it is found. Raises `ConfigError` for a `TRELLIS_LOCAL_SERVERS` it cannot read."""
    from engine.local_servers import local_servers
    from engine.model_catalog import environment_models

    detected = environment_models(os.environ)
    servers = frozenset(server.name for server in local_servers())
    return detected, _Detection(detected=frozenset(detected), local_servers=servers)


def _validated(
    merged: dict[str, Any], provenance: Mapping[Loc, Path], user: Path | None, detection: _Detection
) -> Config:
    """The merged layers as a `Config`, each entry labelled with the layer that defined it.
    Nothing configured (no file, or files without a key) is the defaults, which are the code's
    own values: constructed without validation, so a run with no configuration never builds the
    config models (they are a share of start-up)."""
    if not merged:
        return Config.model_construct()
    try:
        config = Config.model_validate(merged, context=detection)
    except ValidationError as exc:
        raise _config_error(exc, provenance) from exc
    origins: dict[str, str] = {}
    for name in config.models:
        file = provenance.get(("models", name))
        if file is not None:
            origins[name] = USER_ORIGIN if file == user else PROJECT_ORIGIN
    return config._labelled(origins)


def _store_section(layer: dict[str, Any], file: Path, *, project: bool) -> None:
    """Take `[store]` out of a layer before validation: `engine.store.settings` reads and checks
    it (without pydantic, for `trellis sessions`); a project file may not name it at all."""
    from engine.store.errors import StoreConfigError
    from engine.store.settings import project_store_refused, store_table

    if "store" not in layer:
        return
    try:
        if project:
            raise project_store_refused(file)
        store_table(layer, file)
    except StoreConfigError as exc:
        raise ConfigError(str(exc)) from exc
    del layer["store"]


def project_layer_of(cwd: Path) -> tuple[Path, bytes] | None:
    """The project directory around `cwd` and its config file's bytes (for `trellis trust`)."""
    project = project_config_file(cwd)
    if project is None:
        return None
    return project.parent.parent, _read_file(project)


def _trusted(store: TrustStore | None, directory: Path, digest: str) -> bool:
    from engine.trust import TrustStore, TrustStoreError

    try:
        return (store if store is not None else TrustStore()).trusted(directory, digest)
    except TrustStoreError as exc:
        raise ConfigError(exc.problem, file=exc.file) from exc


def _baseline(user_layer: Mapping[str, Any], detection: _Detection) -> UserBaseline:
    """What the user's own file and environment put in force; a section that does not validate
    counts as the defaults here (the full validation then reports it)."""
    from engine.project_config import UserBaseline

    models = user_layer.get("models")
    names = {*models} if isinstance(models, Mapping) else set()
    try:
        context = ContextConfig.model_validate(user_layer.get("context", {}))
    except ValidationError:
        context = ContextConfig()
    try:
        discovery = DiscoveryConfig.model_validate(user_layer.get("discovery", {}))
    except ValidationError:
        discovery = DiscoveryConfig()
    return UserBaseline(
        # not the entries the environment's provider keys make: a repository must not send the
        # workspace to a provider the user did not pick (a local server's models stay local)
        models=frozenset({*names, BUILTIN_MODEL}),
        remote_detected=detection.detected - names,
        local_servers=detection.local_servers if discovery.local else frozenset(),
        local_discovery=discovery.local,
        shell_class=context.shell_privacy_class(),
        secret_patterns=frozenset(context.secret_patterns),
        instruction_files=frozenset(context.instruction_files),
    )


def _read_file(file: Path) -> bytes:
    try:
        return file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror or exc}", file=file) from exc


def _parse_layer(file: Path, raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text (byte {exc.start})", file=file) from exc
    if not text.strip():
        return {}  # what TOML makes of it, without importing the parser (start time)
    import tomllib

    try:
        layer = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message carries the line and column
        raise ConfigError(f"invalid TOML: {exc}", file=file) from exc
    _anchor_scripts(layer, file.parent)
    return layer


def _anchor_scripts(layer: dict[str, Any], base: Path) -> None:
    """A relative `script` path is relative to the file that names it, not to the process cwd."""
    models = layer.get("models")
    if not isinstance(models, dict):
        return
    for entry in models.values():
        if not isinstance(entry, dict):
            continue
        script = entry.get("script")
        if isinstance(script, str) and script:
            path = Path(script).expanduser()
            entry["script"] = str(path if path.is_absolute() else base / path)


def _merge(
    base: dict[str, Any],
    layer: Mapping[str, Any],
    file: Path,
    provenance: dict[Loc, Path],
    prefix: Loc,
) -> None:
    """Merge `layer` into `base`, tables key by key, anything else replaced; record who set what."""
    for key, value in layer.items():
        loc: Loc = (*prefix, key)
        current = base.get(key)
        provenance[loc] = file
        if isinstance(value, dict) and isinstance(current, dict):
            merged = dict(current)
            _merge(merged, value, file, provenance, loc)
            base[key] = merged
            continue
        for stale in [k for k in provenance if len(k) > len(loc) and k[: len(loc)] == loc]:
            del provenance[stale]
        _record(value, loc, file, provenance)
        base[key] = value


def _record(value: object, loc: Loc, file: Path, provenance: dict[Loc, Path]) -> None:
    provenance[loc] = file
    if isinstance(value, dict):
        for key, child in value.items():
            _record(child, (*loc, key), file, provenance)


def _config_error(exc: ValidationError, provenance: Mapping[Loc, Path]) -> ConfigError:
    from engine.project_config import dotted_key

    lines: list[tuple[Path | None, str, str]] = []
    for error in exc.errors(include_url=False):
        loc: Loc = tuple(error["loc"])
        if error["type"] == _UNKNOWN_DEFAULT_MODEL:
            loc = ("default_model",)
        elif error["type"] == _DUPLICATE_MCP_SERVER:
            loc = (*loc, int(error.get("ctx", {})["index"]), "name")
        lines.append((_blame(loc, provenance), dotted_key(loc), _describe(error, loc)))
    file, key, problem = lines[0]
    more = [ConfigError(p, file=f, key=k).problems[0] for f, k, p in lines[1:]]
    return ConfigError(problem, file=file, key=key, more=more)


def _blame(loc: Loc, provenance: Mapping[Loc, Path]) -> Path | None:
    """The file that set the nearest enclosing key of `loc`."""
    for end in range(len(loc), 0, -1):
        file = provenance.get(loc[:end])
        if file is not None:
            return file
    return None


def _describe(error: ErrorDetails, loc: Loc) -> str:
    match error["type"]:
        case "extra_forbidden" if loc and loc[-1] == "api_key":
            return (
                "API keys are never stored in the config: put the key in an environment "
                "variable and name that variable with api_key_env"
            )
        case "extra_forbidden":
            known = _known_keys(loc[:-1])
            return f"unknown key (known keys: {', '.join(known)})" if known else "unknown key"
        case "missing":
            return "required key is missing"
        case _:
            message = error["msg"].removeprefix("Value error, ")
            value = error.get("input")
            if isinstance(value, str | int | float | bool):
                message += f" (got {value!r})"
            return message


def _known_keys(loc: Loc) -> list[str]:
    """The keys the table at `loc` accepts, walking the models from `Config`."""
    current: Any = Config
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return []
            current = field.annotation
        elif get_origin(current) in (dict, list):
            current = get_args(current)[-1]
        else:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []
