-- once: the records table, one row per (scope, key).
--
-- The names below are the defaults. sqlitestore's Migrate substitutes the
-- table of its Options for "once_records" (and the derived index name
-- "once_records_expires_at_idx"). Times are integer microseconds since the
-- Unix epoch, on the process's clock (SQLite has no server clock).
-- resolved tells a record completed by Resolve (whose owner is the
-- Resolve's token) from one completed by its claim's owner.
CREATE TABLE IF NOT EXISTS "once_records" (
    scope        TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    fingerprint  BLOB    NOT NULL DEFAULT x'',
    state        INTEGER NOT NULL CHECK (state IN (1, 2)),
    owner        TEXT,
    resolved     INTEGER NOT NULL DEFAULT 0,
    lease_until  INTEGER,
    outcome      BLOB,
    created_at   INTEGER NOT NULL,
    completed_at INTEGER,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (scope, key),
    CHECK (state = 2 OR (owner IS NOT NULL AND lease_until IS NOT NULL)),
    CHECK (state = 1 OR outcome IS NOT NULL)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS "once_records_expires_at_idx" ON "once_records" (expires_at);
