"""Real servers the tests start on loopback: a fake HTTP embedding endpoint, Postgres
helpers (test databases, a streaming standby from the embedded binaries), the pooler
mode of the suite, and ``serve`` replicas. PgBouncer and HAProxy come from
:mod:`bench.proxies`, shared with the benchmarks."""
