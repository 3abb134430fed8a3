-- once: the records table, one row per (scope, key).
--
-- The names below are the defaults. sqlitestore's Migrate substitutes the
-- table of its Options for "once_records" (and the derived index names
-- "once_records_expires_at_idx" and "once_records_held_idx"). Times are
-- integer microseconds since the Unix epoch, on the process's clock
-- (SQLite has no server clock). resolved tells a record completed by
-- Resolve (whose owner is the Resolve's token) from one completed by its
-- claim's owner.
--
-- steps is the record's checkpoints (an opaque blob that Checkpoint
-- writes), NULL when it has none. Every other write keeps it; a claim or
-- Resolve that replaces an expired row (INSERT OR REPLACE) starts without.
-- A claim reads it only from a row it re-sends or may take over, so that
-- a replay never reads its pages.
--
-- A held record is a pending row (state 1) whose held_at is set: since
-- when it is held, until when (hold_until), and the held error's code and
-- message. Its lease_until and owner are then a reconciler's lease. Every
-- fenced write of an owner (complete, renew, checkpoint, release) requires held_at IS
-- NULL. The partial index holds held rows only, so listing held keys never
-- reads the table and claims and completions never write it.
CREATE TABLE IF NOT EXISTS "once_records" (
    scope        TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    fingerprint  BLOB    NOT NULL DEFAULT x'',
    state        INTEGER NOT NULL CHECK (state IN (1, 2)),
    owner        TEXT,
    resolved     INTEGER NOT NULL DEFAULT 0,
    lease_until  INTEGER,
    outcome      BLOB,
    steps        BLOB,
    created_at   INTEGER NOT NULL,
    completed_at INTEGER,
    expires_at   INTEGER NOT NULL,
    held_at      INTEGER,
    hold_until   INTEGER,
    held_code    TEXT,
    held_message TEXT,
    PRIMARY KEY (scope, key),
    CHECK (state = 2 OR (owner IS NOT NULL AND lease_until IS NOT NULL)),
    CHECK (state = 1 OR outcome IS NOT NULL)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS "once_records_expires_at_idx" ON "once_records" (expires_at);

CREATE INDEX IF NOT EXISTS "once_records_held_idx" ON "once_records" (held_at) WHERE held_at IS NOT NULL;
