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
    st.builds(
        lambda moment, offset: moment.isoformat(timespec="seconds") + offset,
        MOMENTS,
        st.sampled_from(["+02", "-05", "+0530", "-0000", "+1400"]),
    ),
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


async def test_the_cue_arm_places_an_episode_by_the_same_own_time(db: Database) -> None:
    """The cue arm (``recall_cue``) reads an episode's time through this part too, created_at
    where it does not know: one reading of an episode's own time across the product."""
    from service.db import recall as recall_queries, recall_cue
    from service.db.sql import shaped_arguments

    june = datetime(2025, 6, 1, tzinfo=UTC), datetime(2025, 7, 1, tzinfo=UTC)
    stored_in_june = datetime(2025, 6, 20, tzinfo=UTC)
    async with db.admin_tx() as conn:
        tenant = await conn.fetchval("INSERT INTO tenants (slug) VALUES ('ep') RETURNING id")
        agent = await conn.fetchval(
            "INSERT INTO agents (tenant_id, name) VALUES ($1, 'a') RETURNING id", tenant
        )
        ids = {
            start_time: await conn.fetchval(
                "INSERT INTO episodes (tenant_id, agent_id, summary, start_time, created_at)"
                " VALUES ($1, $2, $3, $4, $5) RETURNING id",
                tenant,
                agent,
                f"session {n}",
                start_time,
                created_at,
            )
            for n, (start_time, created_at) in enumerate(
                [
                    ("2025-06-10 09:00+02:00", CREATED),  # known: June
                    ("2025-06-30T23:30:00+0200", CREATED),  # known: June 30th, 21:30 UTC
                    ("2025-05-31T23:30:00-01:00", CREATED),  # known: June 1st, 00:30 UTC
                    ("2025-08-01", stored_in_june),  # known: August, though stored in June
                    ("last spring", stored_in_june),  # not known: when it was stored
                    ("last winter", CREATED),  # not known, stored in 2030
                ]
            )
        }
    search = recall_cue.CueSearch(
        start=june[0],
        end=june[1],
        vector=None,
        floor=0.0,
        tsquery=None,
        lexemes=[],
        patterns=[],
        recency=True,
        episodes=True,
        depth=50,
    )
    scope = recall_queries.Scope("a", None, "", None)
    statement = recall_cue.cue_statement(scope, search)
    values = recall_cue.cue_values(tenant, scope, search)
    name = recall_cue.cue_name(search, False)
    async with db.tenant_tx(tenant) as conn:
        rows = await conn.fetch(statement, *shaped_arguments(name, statement, values))
    found = {row["id"] for row in rows if row["kind"] == "ep"}
    assert found == {
        ids["2025-06-10 09:00+02:00"],
        ids["2025-06-30T23:30:00+0200"],
        ids["2025-05-31T23:30:00-01:00"],
        ids["last spring"],
    }
