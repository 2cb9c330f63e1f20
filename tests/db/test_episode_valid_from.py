"""An episode's own time read in SQL (the ``episode_valid_from`` part of ``recall.sql``)
agrees with the model's reading (``service.memory.supersession.valid_from``) wherever SQL
claims to know it: the ``as_of`` shape of recall leaves rows out before ranking by it, so a
disagreement would drop a record that held (docs/tools.md, "Facts that change"). Where SQL
does not know (NULL), the row stays for the check after ranking; the common ISO 8601
forms must be known.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings, strategies as st

from service.db import sql
from service.db.pool import Database
from service.db.supersession import Times
from service.memory.supersession import valid_from

CREATED = datetime(2030, 5, 5, 5, 5, 5, tzinfo=UTC)
"""Every example episode's created_at: what the model falls back to."""

ZONES = st.builds(
    lambda minutes: timezone(timedelta(minutes=minutes)),
    st.integers(-15 * 60 - 59, 15 * 60 + 59),
)
MOMENTS = st.datetimes(datetime(2, 1, 1), datetime(9998, 12, 31))  # noqa: DTZ001 (naive on purpose)
ISO = st.one_of(
    st.builds(
        lambda moment, sep, spec: moment.isoformat(sep, spec),
        MOMENTS,
        st.sampled_from("T "),
        st.sampled_from(["auto", "minutes", "seconds", "milliseconds", "microseconds"]),
    ),
    st.builds(
        lambda moment, zone, z: moment.replace(tzinfo=zone).isoformat().replace("+00:00", z),
        MOMENTS,
        ZONES,
        st.sampled_from(["+00:00", "Z", "z"]),
    ),
    st.builds(date.isoformat, st.dates(date(2, 1, 1), date(9998, 12, 31))),
)
"""The forms an agent's history timestamps take: each must be known to SQL."""
NOISE = st.one_of(
    st.text(max_size=40),
    st.builds(lambda text, tail: text + tail, ISO, st.sampled_from([" PST", " ", "x", "+05"])),
    st.builds(lambda text: " " + text, ISO),
    st.sampled_from(["2024-01-01T24:00", "2024-02-30", "2024-01-01T10:00:60", "2024-W01-1"]),
    st.from_regex(
        r"\A\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?\Z"
    ),
)
"""Anything else: SQL may say it does not know, never something else than the model."""


async def _read(db: Database, texts: list[str]) -> list[datetime | None]:
    expression = sql.package_parts()["episode_valid_from"]
    async with db.admin_tx() as conn:
        rows = await conn.fetch(
            f"SELECT {expression} AS at FROM unnest($1::text[], $2::timestamptz[])"  # noqa: S608
            " WITH ORDINALITY x(start_time, created_at, n) ORDER BY n",
            texts,
            [CREATED] * len(texts),
        )
    return [row["at"] for row in rows]


def _model(text: str) -> datetime:
    return valid_from(Times(("ep", 1), None, text, CREATED))


PROPERTY = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@PROPERTY
@given(known=st.lists(ISO, min_size=1, max_size=20), other=st.lists(NOISE, max_size=20))
async def test_sql_reads_an_episodes_start_time_as_the_model_or_not_at_all(
    db: Database, known: list[str], other: list[str]
) -> None:
    texts = [t for t in known + other if "\x00" not in t]
    read = await _read(db, texts)
    for text, at in zip(texts, read, strict=True):
        if text in known:
            assert at is not None, text
        if at is not None:
            assert at == _model(text), text


async def test_no_start_time_is_created_at(db: Database) -> None:
    expression = sql.package_parts()["episode_valid_from"]
    async with db.admin_tx() as conn:
        at = await conn.fetchval(
            f"SELECT {expression} FROM (SELECT NULL::text AS start_time,"  # noqa: S608
            " $1::timestamptz AS created_at) x",
            CREATED,
        )
    assert at == CREATED
