-- add_usage --
-- Add one flush's counts to a tenant's daily usage row for a tool.
-- $1 tenant_id uuid, $2 day date, $3 tool text, $4 calls bigint, $5 failures bigint,
-- $6 bytes_out bigint, $7 chars_returned bigint, $8 chars_saved bigint
INSERT INTO usage_daily AS u (tenant_id, day, tool, calls, failures, bytes_out, chars_returned,
                              chars_saved)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (tenant_id, day, tool) DO UPDATE
SET calls = u.calls + EXCLUDED.calls,
    failures = u.failures + EXCLUDED.failures,
    bytes_out = u.bytes_out + EXCLUDED.bytes_out,
    chars_returned = u.chars_returned + EXCLUDED.chars_returned,
    chars_saved = u.chars_saved + EXCLUDED.chars_saved
