"""calibrate_threshold's arguments: defaults, clamps and the one refusal
(docs/tools.md, "Tool reference").

``0`` (or ``""``) means "the configured default" for every parameter, as in CPersona.
``sample_size`` is clamped to ``1..CPERSONA_CALIBRATE_MAX_SAMPLE`` (it feeds an
all-pairs computation, so it must be bounded on both sides) and ``z_factor`` to
``-10..10``; a ``percentile`` above 1 is read as a percent (95 → 0.95) and anything
outside ``(0, 1]`` after that is refused. The refusal is decided before the
persistence-pause check (docs/tools.md, "pause_persistence"), so it needs no database.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from service.config import Settings
from service.memory.calibration.stats import METHODS, Method

Z_LIMIT: Final = 10.0


@dataclass(frozen=True, slots=True)
class CalibrationRequest:
    """The arguments of calibrate_threshold; ``agent_id`` '' calibrates the whole tenant."""

    agent_id: str
    sample_size: int = 0
    z_factor: float = 0.0
    method: str = ""
    percentile: float = 0.0


@dataclass(frozen=True, slots=True)
class Params:
    """The resolved parameters of one calibration."""

    sample_n: int
    z_factor: float
    method: Method
    percentile: float


def _number(value: object) -> float | None:
    """A finite non-zero number, else None ("use the default"), like CPersona's extractor."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number != 0 and not math.isnan(number) else None


def _percentile_of(given: float) -> float | str:
    resolved = given / 100.0 if given > 1 else given
    if not 0.0 < resolved <= 1.0:
        return f"percentile must be in (0, 1] (or a percent 1-100), got {given}"
    return resolved


def resolve_percentile(settings: Settings, value: object) -> float | str:
    """The quantile in (0, 1], or the refusal text naming the value as given."""
    given = _number(value)
    return settings.calibrate_percentile if given is None else _percentile_of(given)


def percentile_problem(value: object) -> str | None:
    """The refusal for a bad percentile, or None; independent of the configured default."""
    given = _number(value)
    resolved = None if given is None else _percentile_of(given)
    return resolved if isinstance(resolved, str) else None


def _method(settings: Settings, value: str) -> Method | None:
    chosen = value or settings.calibrate_method
    for method in METHODS:
        if chosen == method:
            return method
    return None


def _sample_size(settings: Settings, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value == 0:
        value = settings.calibrate_sample_size
    return max(1, min(int(value), settings.calibrate_max_sample))


def _z_factor(settings: Settings, value: object) -> float:
    given = _number(value)
    if given is None:
        return settings.calibrate_z_factor
    return max(-Z_LIMIT, min(Z_LIMIT, given))


def resolve(settings: Settings, req: CalibrationRequest) -> Params | str:
    """The parameters of ``req`` with defaults and clamps applied, or a refusal text."""
    percentile = resolve_percentile(settings, req.percentile)
    if isinstance(percentile, str):
        return percentile
    method = _method(settings, req.method)
    if method is None:
        return f"Invalid method '{req.method}'. Supported: {', '.join(sorted(METHODS))}"
    return Params(
        sample_n=_sample_size(settings, req.sample_size),
        z_factor=_z_factor(settings, req.z_factor),
        method=method,
        percentile=percentile,
    )
