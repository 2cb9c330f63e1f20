-- add_usage --
-- Add one flush's counts to a tenant's daily usage row for a tool.
-- :tenant_id uuid, :day date, :tool text, :calls bigint, :failures bigint,
-- :bytes_out bigint, :chars_returned bigint, :chars_saved bigint,
-- :tokens_delivered bigint, :tokens_saved_previews bigint,
-- :tokens_saved_excerpts bigint, :tokens_saved_budgets bigint,
-- :tokens_saved_ledger bigint
INSERT INTO usage_daily AS u (tenant_id, day, tool, calls, failures, bytes_out, chars_returned,
                              chars_saved, tokens_delivered, tokens_saved_previews,
                              tokens_saved_excerpts, tokens_saved_budgets, tokens_saved_ledger)
VALUES (:tenant_id, :day, :tool, :calls, :failures, :bytes_out, :chars_returned, :chars_saved, :tokens_delivered, :tokens_saved_previews, :tokens_saved_excerpts, :tokens_saved_budgets, :tokens_saved_ledger)
ON CONFLICT (tenant_id, day, tool) DO UPDATE
SET calls = u.calls + EXCLUDED.calls,
    failures = u.failures + EXCLUDED.failures,
    bytes_out = u.bytes_out + EXCLUDED.bytes_out,
    chars_returned = u.chars_returned + EXCLUDED.chars_returned,
    chars_saved = u.chars_saved + EXCLUDED.chars_saved,
    tokens_delivered = u.tokens_delivered + EXCLUDED.tokens_delivered,
    tokens_saved_previews = u.tokens_saved_previews + EXCLUDED.tokens_saved_previews,
    tokens_saved_excerpts = u.tokens_saved_excerpts + EXCLUDED.tokens_saved_excerpts,
    tokens_saved_budgets = u.tokens_saved_budgets + EXCLUDED.tokens_saved_budgets,
    tokens_saved_ledger = u.tokens_saved_ledger + EXCLUDED.tokens_saved_ledger

-- usage_report --
-- A tenant's daily usage of the last $2 UTC days (today included), newest day first.
-- $1 tenant_id uuid, $2 days integer
SELECT day, tool, calls, failures, bytes_out, tokens_delivered, tokens_saved_previews,
       tokens_saved_excerpts, tokens_saved_budgets, tokens_saved_ledger
FROM usage_daily
WHERE tenant_id = $1 AND day > (now() AT TIME ZONE 'UTC')::date - $2::integer
ORDER BY day DESC, tool
