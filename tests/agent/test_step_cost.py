"""A model entry's price makes each reported step record its cost, and ACP's `usage_update`
carry the session's total (`{amount, currency}`); without a price there is no cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import Config, ConfigError, ModelEntry, ModelPrice, load_config
from engine.cost import step_cost
from engine.events import StepEnd, Usage
from engine.gateway.scripted import Reply
from replay.acp import replay_updates
from tests.agent.conftest import FlakyStore, MakeAgent, of_type, stored_log


def priced(price: ModelPrice | None) -> Config:
    entry = ModelEntry(provider="scripted", price=price)
    return Config(default_model="priced", models={"priced": entry})


async def test_each_reported_step_records_its_cost_and_acp_sends_the_total(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    price = ModelPrice(input=3.0, output=15.0, currency="EUR")
    agent = await make_agent(
        [
            Reply(text="one", usage=Usage(input_tokens=1000, output_tokens=100)),
            Reply(text="two", usage=Usage(input_tokens=2000, output_tokens=200)),
            Reply(text="cut", error="the model failed"),
        ],
        config=priced(price),
    )
    for prompt in ("first", "second", "third"):
        agent.send(prompt)
        await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    costs = [end.cost for end in of_type(log, StepEnd)]
    assert [c.amount if c else None for c in costs] == [
        pytest.approx(0.0045),
        pytest.approx(0.009),
        None,
    ]
    updates = [u for u in replay_updates(log, "/ws") if u["sessionUpdate"] == "usage_update"]
    totals = [u.get("cost") for u in updates]
    assert [t["currency"] for t in totals if t] == ["EUR"] * 3
    assert [t["amount"] for t in totals if t] == [
        pytest.approx(0.0045),
        pytest.approx(0.0135),
        pytest.approx(0.0135),  # a failed step reports no tokens: the total stands
    ]


async def test_without_a_price_no_cost_is_recorded_or_sent(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="one")], config=priced(None))
    agent.send("first")
    await agent.when_idle()
    log = await stored_log(store, agent.session_id)
    assert [end.cost for end in of_type(log, StepEnd)] == [None]
    assert all("cost" not in u for u in replay_updates(log, "/ws"))


def test_a_price_is_read_from_the_config_and_a_bad_currency_is_named(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text(
        'default_model = "p"\n[models.p]\nprovider = "scripted"\n'
        "price = { input = 3, output = 15.5 }\n"
    )
    config = load_config(tmp_path, user_file=user)
    assert config.models["p"].price == ModelPrice(input=3.0, output=15.5, currency="USD")
    user.write_text(
        '[models.p]\nprovider = "scripted"\nprice = { input = 3, output = 15, currency = "euro" }\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, user_file=user)
    assert "models.p.price.currency" in str(caught.value)


def test_each_token_part_is_billed_at_its_own_price() -> None:
    """uncached input x input + cache reads x cache_read + cache writes x cache_write + output x
    output, per million tokens."""
    price = ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    entry = ModelEntry(provider="anthropic", price=price)
    usage = Usage(
        input_tokens=2_000, cache_read_tokens=100_000, cache_write_tokens=4_000, output_tokens=500
    )
    cost = step_cost(entry, usage)
    assert cost is not None
    assert cost.currency == "USD"
    # 2,000 x 3 + 100,000 x 0.3 + 4,000 x 3.75 + 500 x 15 = 6,000 + 30,000 + 15,000 + 7,500
    assert cost.amount == pytest.approx(58_500 / 1_000_000)


def test_a_cache_price_left_out_is_the_input_price() -> None:
    entry = ModelEntry(provider="openai", price=ModelPrice(input=2.0, output=8.0))
    usage = Usage(input_tokens=1_000, cache_read_tokens=3_000, cache_write_tokens=0)
    cost = step_cost(entry, usage)
    assert cost is not None
    assert cost.amount == pytest.approx(4_000 * 2.0 / 1_000_000)
    only_cached = step_cost(entry, Usage(cache_read_tokens=10))
    assert only_cached is not None
    assert only_cached.amount > 0


def test_cache_prices_are_read_from_the_config_and_must_not_be_negative(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text(
        '[models.p]\nprovider = "anthropic"\n'
        "price = { input = 3, output = 15, cache_read = 0.3, cache_write = 3.75 }\n"
    )
    price = load_config(tmp_path, user_file=user).models["p"].price
    assert price == ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75)
    user.write_text(
        '[models.p]\nprovider = "anthropic"\nprice = { input = 3, output = 15, cache_read = -1 }\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, user_file=user)
    assert "models.p.price.cache_read" in str(caught.value)
