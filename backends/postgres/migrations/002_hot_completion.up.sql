-- once: completions and renewals become HOT updates; the claim writes one
-- index besides the primary key, on a column only the claim sets.
--
-- Before: the sweeper's index was on expires_at, which every completion
-- changes, so no completion could be a HOT update: each wrote a new tuple
-- and an entry in both indexes. Now:
--
--   * expires_at stays the record's true expiry (every operation checks it)
--     but is no longer indexed: complete and renew change only unindexed
--     columns (state, owner, lease_until, outcome, expires_at).
--   * sweep_after, set once by the claim to claim time + lease + retention
--     (an upper bound of when a record completed within its lease
--     expires), is what the sweeper's index covers. The sweeper deletes
--     the candidates whose expires_at has passed and moves sweep_after of
--     the others (a record completed or resolved late) to their
--     expires_at. Existing rows start at -infinity: the first sweeps
--     visit each once. Adding the column with a constant default does not
--     rewrite the table.
--   * scope and key compare bytewise (COLLATE "C"): the primary key is
--     searched with memcmp, not the database's collation. Equality is
--     unchanged (every deterministic collation compares equal bytes as
--     equal). This rebuilds the primary key index.
--   * fillfactor 90 leaves room on each page for the completed version of
--     the rows inserted there, so that the completion finds space for a
--     HOT update (it applies to pages written from now on).
--   * created_at and completed_at, which nothing reads, are dropped.
--   * The CHECK constraints go: PostgreSQL prepares every CHECK expression
--     of a table on each INSERT and UPDATE, which doubled the cost of the
--     claim and of the completion. The backend checks the same lengths in
--     Go before sending any statement (and the core before that), and its
--     statements only write consistent states.
--
-- CREATE INDEX runs inside Migrate's transaction and blocks writes to the
-- table while it builds; on a large table, create
-- "once_records_sweep_idx" with CREATE INDEX CONCURRENTLY before
-- running this migration (IF NOT EXISTS then skips it).
ALTER TABLE "public"."once_records"
    ADD COLUMN IF NOT EXISTS sweep_after timestamptz NOT NULL DEFAULT '-infinity',
    ALTER COLUMN scope TYPE text COLLATE "C",
    ALTER COLUMN key TYPE text COLLATE "C",
    DROP COLUMN IF EXISTS created_at,
    DROP COLUMN IF EXISTS completed_at,
    DROP CONSTRAINT IF EXISTS once_records_scope_len,
    DROP CONSTRAINT IF EXISTS once_records_key_len,
    DROP CONSTRAINT IF EXISTS once_records_fingerprint_len,
    DROP CONSTRAINT IF EXISTS once_records_owner_len,
    DROP CONSTRAINT IF EXISTS once_records_state,
    SET (fillfactor = 90);

ALTER TABLE "public"."once_records" ALTER COLUMN sweep_after DROP DEFAULT;

CREATE INDEX IF NOT EXISTS "once_records_sweep_idx" ON "public"."once_records" (sweep_after);

DROP INDEX IF EXISTS "public"."once_records_expires_at_idx";
