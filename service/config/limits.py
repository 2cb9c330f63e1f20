"""Settings of the bounded edge: pool waits, lanes, per-key limits, body and stream
timeouts (docs/reliability.md explains each bound and why it has its default)."""

from __future__ import annotations

import dataclasses

from service.config.fields import (
    COUNT,
    RATE,
    SECONDS,
    parse_bool,
    parse_float,
    parse_int,
    parse_proxies,
    setting,
)


@dataclasses.dataclass(frozen=True)
class LimitSettings:
    # -- bounded resources, admission and rate limits (docs/reliability.md)
    db_acquire_timeout: float = setting(5.0, "CPERSONA_DB_ACQUIRE_TIMEOUT", parse=SECONDS)
    db_bulk_pool_max: int = setting(2, "CPERSONA_DB_BULK_POOL_MAX", parse=parse_int(1, 1000))
    db_tenant_share: float = setting(0.25, "CPERSONA_DB_TENANT_SHARE", parse=parse_float(0.01, 1.0))
    """The share of the pool's connections one tenant may hold at a time (at least one);
    1: no per-tenant bound."""
    lane_read: int = setting(32, "CPERSONA_LANE_READ", parse=parse_int(1, 100_000))
    lane_write: int = setting(16, "CPERSONA_LANE_WRITE", parse=parse_int(1, 100_000))
    lane_bulk: int = setting(4, "CPERSONA_LANE_BULK", parse=parse_int(1, 100_000))
    lane_queue: int = setting(64, "CPERSONA_LANE_QUEUE", parse=parse_int(0, 1_000_000))
    lane_queue_timeout: float = setting(2.0, "CPERSONA_LANE_QUEUE_TIMEOUT", parse=SECONDS)
    lane_tenant_share: float = setting(
        0.25, "CPERSONA_LANE_TENANT_SHARE", parse=parse_float(0.01, 1.0)
    )
    """The share of each lane's places (and of its queue) one tenant may hold."""
    max_concurrent_per_key: int = setting(16, "CPERSONA_MAX_CONCURRENT_PER_KEY", parse=COUNT)
    rate_limit_per_key: float = setting(0.0, "CPERSONA_RATE_LIMIT_PER_KEY", parse=RATE)
    rate_limit_burst: float = setting(0.0, "CPERSONA_RATE_LIMIT_BURST", parse=RATE)
    auth_failure_rate: float = setting(1.0, "CPERSONA_AUTH_FAILURE_RATE", parse=RATE)
    """Failed credentials per second one client address may send after its burst; then
    429 before the database is asked (0: no throttle)."""
    auth_failure_burst: float = setting(20.0, "CPERSONA_AUTH_FAILURE_BURST", parse=RATE)
    auth_miss_cache: int = setting(10_000, "CPERSONA_AUTH_MISS_CACHE", parse=COUNT)
    """Recently refused credentials remembered per process, answered 401 without the
    database (0: none remembered)."""
    replicas: int = setting(1, "CPERSONA_REPLICAS", parse=parse_int(1, 100_000))
    body_read_timeout: float = setting(10.0, "CPERSONA_BODY_READ_TIMEOUT", parse=SECONDS)
    body_min_rate: int = setting(1024, "CPERSONA_BODY_MIN_RATE", parse=COUNT)
    stream_stall_timeout: float = setting(30.0, "CPERSONA_STREAM_STALL_TIMEOUT", parse=SECONDS)
    metrics_host_check: bool = setting(True, "CPERSONA_METRICS_HOST_CHECK", parse=parse_bool)
    # -- connections (docs/reliability.md, "The edge (hardening round two)")
    forwarded_allow_ips: tuple[str, ...] = setting((), "FORWARDED_ALLOW_IPS", parse=parse_proxies)
    """Peers whose X-Forwarded-For / X-Forwarded-Proto are believed (the proxies in front);
    empty = none, so the client address is the TCP peer's."""
    http_header_timeout: float = setting(10.0, "CPERSONA_HTTP_HEADER_TIMEOUT", parse=SECONDS)
    """Seconds a connection has to send a complete request line and headers: from when it
    opens, and on a kept-alive connection from the first byte of the next request."""
    http_keepalive_timeout: int = setting(
        5, "CPERSONA_HTTP_KEEPALIVE_TIMEOUT", parse=parse_int(1, 3600)
    )
    """Seconds an idle kept-alive connection is held after an answer."""
    http_max_connections_per_address: int = setting(
        256, "CPERSONA_HTTP_MAX_CONNECTIONS_PER_ADDRESS", parse=COUNT
    )
    """Open connections one client address may hold per serving process (trusted proxies
    are exempt); 0 = unlimited."""
