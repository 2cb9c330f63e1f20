"""reconstruct's budget: base, clamp, floor, modes, and which budget fields show."""

from __future__ import annotations

import pytest

from service.config import load_settings
from service.errors import ConfigError
from service.mcp.shaping.reconstruct import budget
from service.mcp.shaping.reconstruct.budget import BudgetPolicy, QuoteSettings

DEFAULTS = QuoteSettings()


def test_acceptance_7_a_tiny_budget_is_raised_to_one_head_quote() -> None:
    found = budget.resolve(10, 10, DEFAULTS)
    assert found.requested == 10
    assert found.effective == 800
    assert found.policy == BudgetPolicy("caller", True, "raised_to_one_excerpt")
    assert budget.shows_policy(found)


def test_acceptance_8_the_default_fits_the_window() -> None:
    found = budget.resolve(None, 10, DEFAULTS)
    assert found.effective == 6000  # 5 x 800 + 5 x 400
    assert found.policy == BudgetPolicy("server_default", False, "default_fits_the_window")
    assert not budget.shows_policy(found)
    assert budget.resolve(None, 12, DEFAULTS).effective == 6800  # held items count
    assert budget.resolve(None, 2, DEFAULTS).policy.reason == "budget_omitted"
    assert budget.resolve(None, 2, DEFAULTS).effective == 4000


def test_a_caller_budget_is_clamped_to_the_maximum() -> None:
    found = budget.resolve(50_000, 10, DEFAULTS)
    assert found.effective == 20_000
    assert found.policy == BudgetPolicy("caller", True, "budget_requested")
    assert budget.shows_policy(found)
    plain = budget.resolve(900, 10, DEFAULTS)
    assert (plain.effective, plain.policy.clamped, budget.shows_policy(plain)) == (
        900,
        False,
        False,
    )


def test_a_forced_budget_overrides_the_caller_and_always_shows() -> None:
    forced = QuoteSettings(forced_budget=3000)
    found = budget.resolve(900, 10, forced)
    assert found.effective == 3000
    assert found.requested == 900
    assert found.policy == BudgetPolicy("operator_forced", False, "forced_budget_set")
    assert budget.shows_policy(found)


def test_modes_lite_has_its_default_and_pro_is_uncapped() -> None:
    lite = budget.resolve(None, 10, DEFAULTS, "lite")
    assert lite.effective == 2800
    assert lite.policy == BudgetPolicy("server_default", False, "budget_omitted")
    pro = budget.resolve(None, 15, DEFAULTS, "pro")
    assert pro.effective is None
    assert pro.policy.reason == "bounded_by_the_cap"
    assert budget.uncapped(pro, 12_345).effective == 12_345
    assert budget.resolve(900, 15, DEFAULTS, "pro").effective == 900


def test_head_caps_by_position_and_with_filling_off() -> None:
    assert [DEFAULTS.head_cap(p) for p in (0, 4, 5, 9)] == [800, 800, 400, 400]
    off = QuoteSettings(quote_chars=0)
    assert off.head_cap(7) == 500
    assert off.floor == 500


def test_usage_shows_only_when_the_budget_cut_something() -> None:
    assert not budget.shows_usage(False, 0, 0)
    assert budget.shows_usage(True, 0, 0)
    assert budget.shows_usage(False, 1, 0)
    assert budget.shows_usage(False, 0, 2)


def test_settings_are_read_and_mapped() -> None:
    settings = load_settings({"CPERSONA_RECONSTRUCT_FORCED_BUDGET": "1200"})
    mapped = QuoteSettings.of(settings)
    assert mapped == QuoteSettings(forced_budget=1200)


@pytest.mark.parametrize(
    ("environ", "names"),
    [
        ({"CPERSONA_RECONSTRUCT_MAX_BUDGET": "100"}, "CPERSONA_RECONSTRUCT_MAX_BUDGET"),
        ({"CPERSONA_RECONSTRUCT_DEFAULT_BUDGET": "30000"}, "CPERSONA_RECONSTRUCT_DEFAULT_BUDGET"),
        ({"CPERSONA_RECONSTRUCT_FORCED_BUDGET": "499"}, "CPERSONA_RECONSTRUCT_FORCED_BUDGET"),
        ({"CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS": "900"}, "CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS"),
        ({"CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS": "0"}, "CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS"),
    ],
)
def test_invalid_combinations_refuse_startup(environ: dict[str, str], names: str) -> None:
    with pytest.raises(ConfigError, match=names):
        load_settings(environ)
