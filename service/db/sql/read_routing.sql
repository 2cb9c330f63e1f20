-- wal_position --
-- Where the primary's write-ahead log ends now (run on the primary): a replica that has
-- replayed this far has everything committed before the check began.
SELECT pg_current_wal_lsn()::text

-- replica_progress --
-- How far a streaming replica is (run on the replica): whether it is a standby at all,
-- whether it has replayed the primary's position, and the seconds since the last
-- transaction it replayed committed (NULL before it replayed one).
-- $1 primary_position text (a pg_lsn from wal_position)
SELECT pg_is_in_recovery() AS standby,
       coalesce(pg_last_wal_replay_lsn() >= $1::text::pg_lsn, false) AS caught_up,
       extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8
           AS since_replay
