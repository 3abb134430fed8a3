-- once: the claim writes the primary key and nothing else; the sweeper
-- walks the table instead of an index.
--
-- Before: every claim inserted an entry into the sweeper's index on
-- sweep_after (claim time + lease + retention), a second btree insertion
-- and WAL record on the hot path of every first execution, for a sweep
-- that runs once a minute. Now:
--
--   * sweep_after and its index go. The sweeper walks the heap in bounded
--     chunks of pages (a TID Range Scan, PostgreSQL 14 or later), deleting
--     the rows whose expires_at has passed with FOR UPDATE SKIP LOCKED, so
--     a pass reads the whole table in the background, costs claims and
--     completions nothing, and never waits for nor blocks them.
--   * A record is deleted by the first full pass after it expired (before,
--     at the latest one lease after that).
--
-- Both statements only change the catalog: DROP COLUMN does not rewrite
-- the table (the column's space is reclaimed as rows are rewritten), and
-- DROP INDEX drops the index's files. They take the table's ACCESS
-- EXCLUSIVE lock for that moment, as every migration here does.
DROP INDEX IF EXISTS "public"."once_records_sweep_idx";

ALTER TABLE "public"."once_records" DROP COLUMN IF EXISTS sweep_after;
