"""Storage of the health checks: one module per group of checks, SQL in ../sql/health/."""
