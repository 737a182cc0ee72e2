"""Every model entry a session may bind, and where each comes from: the configuration's, one per
provider whose key is in the environment, and those the local servers serve (`engine.local_servers`).

Detected entries are a layer below the configuration: an entry the user or the project defines
under the same name wins, whole. They are named predictably (`openai`, `anthropic`, `gemini`;
`ollama/MODEL`, `lmstudio/MODEL`, ...), so a `default_model` can name one before it is found, and
nothing is sent to a detected endpoint until a session binds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from engine.config import (
    BUILTIN_MODEL,
    Config,
    ConfigError,
    DetectedModel,
    ModelEntry,
    PrivacyClassName,
    Provider,
)
from engine.local_servers import NAMED_DEADLINE, LocalServer, ServerAnswer, ask
from engine.privacy import PrivacyClass


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderDefaults:
    """What the entry a provider key makes runs with; the user's own entry of the same name
    replaces it whole."""

    model: str
    context_window: int
    """Tokens, as the provider documents the model's window."""
    egress: PrivacyClassName
    key_envs: tuple[str, ...]
    """The variables that hold the key, in the order they are looked at."""
    base_url_env: str = ""
    """A variable that moves the endpoint (OpenAI's SDKs read `OPENAI_BASE_URL`)."""


PROVIDER_DEFAULTS: Mapping[Provider, ProviderDefaults] = {
    "openai": ProviderDefaults(
        model="gpt-6.1-sol",
        context_window=1_050_000,
        egress="internal",
        key_envs=("OPENAI_API_KEY",),
        base_url_env="OPENAI_BASE_URL",
    ),
    "anthropic": ProviderDefaults(
        model="claude-sonnet-5-5",
        context_window=1_000_000,
        egress="internal",
        key_envs=("ANTHROPIC_API_KEY",),
    ),
    "gemini": ProviderDefaults(
        model="gemini-3.8-flash",
        context_window=1_048_576,
        egress="internal",
        key_envs=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    ),
}
"""The one table of defaults for the providers' own endpoints: each provider's current general
model, its documented window, and `internal` (a third party's endpoint receives nothing above)."""


def environment_models(environ: Mapping[str, str]) -> dict[str, DetectedModel]:
    """The entry of each provider whose key is set in `environ`, named for the provider."""
    found: dict[str, DetectedModel] = {}
    for provider, defaults in PROVIDER_DEFAULTS.items():
        key_env = next((name for name in defaults.key_envs if environ.get(name)), None)
        if key_env is None:
            continue
        base_url = environ.get(defaults.base_url_env, "") if defaults.base_url_env else ""
        # the code's own values: constructed, not validated (start time)
        entry = ModelEntry.model_construct(
            provider=provider,
            model=defaults.model,
            base_url=base_url,
            api_key_env=key_env,
            context_window=defaults.context_window,
            egress=defaults.egress,
        )
        origin = f"environment {key_env}" + (f", {defaults.base_url_env}" if base_url else "")
        found[provider] = DetectedModel(entry=entry, origin=origin)
    return found


def local_models(answers: Iterable[ServerAnswer]) -> dict[str, DetectedModel]:
    """An entry per model the servers serve, named `SERVER/MODEL`; loopback, so the endpoint may
    receive every class (`ModelEntry.effective_egress`)."""
    found: dict[str, DetectedModel] = {}
    for answer in answers:
        server = answer.server
        for model in answer.models:
            entry = ModelEntry.model_construct(
                provider="openai",
                model=model.id,
                base_url=server.base_url,
                context_window=model.context_window,
            )
            found[f"{server.name}/{model.id}"] = DetectedModel(
                entry=entry, origin=server.describe()
            )
    return found


def server_of(name: str, servers: Sequence[LocalServer]) -> LocalServer | None:
    """The local server whose model `name` names (`ollama/qwen3:8b`), if any."""
    prefix, slash, model = name.partition("/")
    if not slash or not model:
        return None
    return next((server for server in servers if server.name == prefix), None)


def provider_of(config: Config, name: str, servers: Sequence[LocalServer]) -> str | None:
    """The provider of the model `name` as a stored session's bind names it: the entry's, or
    `openai` for a model of a local server (they speak its API), without asking the server;
    None for a name neither knows (an entry since removed from the config)."""
    if name in config.models:
        return config.models[name].provider
    return "openai" if server_of(name, servers) is not None else None


async def with_named_local_models(
    config: Config, names: Iterable[str | None], servers: Sequence[LocalServer]
) -> Config:
    """`config` knowing the local models `names` name that it does not know yet: each of their
    servers is asked once. A name that is no local server's is left for `Config.model` to judge.

    Raises `ConfigError` naming the server, the address asked and its answer when a named model
    is not served, and when local discovery is off."""
    wanted: dict[LocalServer, list[str]] = {}
    for name in names:
        if name is None or name in config.models:
            continue
        server = server_of(name, servers)
        if server is None:
            continue
        if not config.discovery.local:
            raise ConfigError(
                f"model {name!r} is one a local server serves, and local discovery is off "
                "([discovery] local = false)"
            )
        wanted.setdefault(server, []).append(name)
    if not wanted:
        return config
    answers = await ask(tuple(wanted), deadline=NAMED_DEADLINE)
    found = local_models(answers)
    for answer in answers:
        for name in wanted[answer.server]:
            if name not in found:
                raise ConfigError(_not_served(name, answer))
    return config.with_models(found)


def _not_served(name: str, answer: ServerAnswer) -> str:
    server = answer.server
    asked = f"asked {server.label} at {server.base_url}/models"
    if answer.problem is not None:
        return f"model {name!r}: {asked}: {answer.problem}"
    served = ", ".join(model.id for model in answer.models) or "none"
    model_id = name.partition("/")[2]
    return f"model {name!r}: {asked}: it serves no {model_id!r} (it serves: {served})"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChoice:
    """One entry as the model picker and `trellis models` show it."""

    name: str
    provider: str
    model: str
    """What the provider is asked for (the entry's name when it sets none)."""
    context_window: int | None
    egress: PrivacyClass
    origin: str
    detected: bool = False
    """Found in the environment or on a local server, not configured."""

    @property
    def offline(self) -> bool:
        """The embedded model: no network, deterministic."""
        return self.provider == "scripted"


def model_choices(config: Config) -> tuple[ModelChoice, ...]:
    """Every entry of `config`, the built-in one first, then in its order: as configured, then
    as detected (detected entries join after the configured ones, `Config.with_models`)."""
    names = sorted(config.models, key=lambda name: name != BUILTIN_MODEL)
    return tuple(_choice(config, name) for name in names)


def _choice(config: Config, name: str) -> ModelChoice:
    entry = config.models[name]
    return ModelChoice(
        name=name,
        provider=entry.provider,
        model=entry.model or name,
        context_window=entry.context_window,
        egress=entry.effective_egress(),
        origin=config.origin(name),
        detected=config.detected(name),
    )


def window_text(choice: ModelChoice) -> str:
    """Its window in tokens as listed: `1,050,000`; `?` when the endpoint does not say, `-` for
    the offline model."""
    if choice.context_window is None:
        return "-" if choice.offline else "?"
    return f"{choice.context_window:,}"


def choices_table(choices: Sequence[ModelChoice], *, marked: str) -> list[str]:
    """The entries as aligned text lines under a header, `marked` with a `*`."""
    header = ("name", "provider", "model", "window", "egress", "from")
    rows = [
        (
            choice.name,
            choice.provider,
            choice.model,
            window_text(choice),
            choice.egress.name,
            choice.origin,
        )
        for choice in choices
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
    marks = ["", *("*" if choice.name == marked else "" for choice in choices)]
    return [
        f"{mark:<1} "
        + "  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True))
        + f"  {row[-1]}"
        for mark, row in zip(marks, (header, *rows), strict=True)
    ]
