-- once: the records table, one row per (scope, key).
--
-- The names below are the defaults. postgres.Migrate substitutes the schema
-- and table of its Config for the quoted names "public"."once_records" and
-- "once_records_held_idx"; tools that read these files directly
-- (golang-migrate, atlas) create the default names.
--
--   * scope and key compare bytewise (COLLATE "C"): the primary key is
--     searched with memcmp, not the database's collation.
--   * The primary key is the only index the hot path writes: a claim
--     inserts one entry, and a completion or a renewal changes only
--     unindexed columns (state, owner, lease_until, outcome, expires_at),
--     so it is a HOT update whenever the page has room. fillfactor 90
--     leaves room on each page for the completed version of the rows
--     inserted there.
--   * No CHECK constraint: PostgreSQL prepares every CHECK expression of a
--     table on each INSERT and UPDATE, which doubled the cost of the claim
--     and of the completion. The backend checks the lengths in Go before
--     sending any statement, and its statements only write consistent
--     states.
--   * The sweeper walks the heap in bounded chunks of pages (a TID Range
--     Scan, PostgreSQL 14 or later), deleting the rows whose expires_at has
--     passed with FOR UPDATE SKIP LOCKED: no index on expiry.
--   * claimed_at is when a pending record was claimed (or taken over): the
--     age that listing filters by.
--   * held_at, hold_until, held_code and held_message describe a held
--     record (state 3): since when, until when (a reconciler's lease is
--     lease_until, and owner its token), and the held error's code and
--     message. once_records_held_idx indexes held_at on held rows only:
--     its size is the number of held keys, and the hot path never writes
--     it. Listing held keys reads it instead of the table.
--   * steps is the record's checkpoints (backends.Store.Checkpoint), an
--     opaque blob the store never interprets; NULL when it has none. It is
--     unindexed, so a checkpoint is a HOT update too, and the last column,
--     so that the hot path's reads deform the columns they need before it.
CREATE TABLE IF NOT EXISTS "public"."once_records" (
    scope        text COLLATE "C" NOT NULL,
    key          text COLLATE "C" NOT NULL,
    fingerprint  bytea       NOT NULL DEFAULT '\x',
    state        smallint    NOT NULL,
    owner        text,
    lease_until  timestamptz,
    outcome      bytea,
    expires_at   timestamptz NOT NULL,
    claimed_at   timestamptz,
    held_at      timestamptz,
    hold_until   timestamptz,
    held_code    text,
    held_message text,
    steps        bytea,
    PRIMARY KEY (scope, key)
) WITH (fillfactor = 90);

CREATE INDEX IF NOT EXISTS "once_records_held_idx" ON "public"."once_records" (held_at) WHERE held_at IS NOT NULL;
