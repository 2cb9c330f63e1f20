"""The PgBouncer and HAProxy configurations the benchmarks and tests write (pure parts)."""

from __future__ import annotations

from pathlib import Path

from tests.servers.proxies import haproxy_config, pgbouncer_config, server_params


def test_server_params_follow_socket_and_tcp_urls() -> None:
    socket_url = "postgresql://postgres:@/postgres?host=/tmp/pg/pgdata"
    assert server_params(socket_url) == "host=/tmp/pg/pgdata port=5432 user=postgres"
    tcp = "postgresql://app:s%40cret@db.internal:6543/cpersona"
    assert server_params(tcp) == "host=db.internal port=6543 user=app password=s@cret"


def test_pgbouncer_pools_transactions_and_passes_every_database_through() -> None:
    config = pgbouncer_config("postgresql://postgres:@/postgres?host=/s", 6001, Path("/b"), 3)
    lines = config.splitlines()
    assert "* = host=/s port=5432 user=postgres" in lines
    assert "pool_mode = transaction" in lines
    assert "listen_addr = 127.0.0.1" in lines
    assert "default_pool_size = 3" in lines


def test_haproxy_balances_round_robin_checks_readyz_and_names_the_replica() -> None:
    lines = haproxy_config(7000, 7001, [8001, 8002]).splitlines()
    assert "    bind 127.0.0.1:7000" in lines
    assert "    balance roundrobin" in lines
    assert any("uri /readyz" in line for line in lines)
    assert "    http-response set-header x-cpersona-replica %s" in lines
    assert [line for line in lines if line.startswith("    server ")] == [
        "    server r1 127.0.0.1:8001",
        "    server r2 127.0.0.1:8002",
    ]
