-- once: the records table, one row per (scope, key).
--
-- The names below are the defaults. postgres.Migrate substitutes the schema
-- and table of its Config for the quoted names "public"."once_records" and
-- "once_records_expires_at_idx"; tools that read these files directly
-- (golang-migrate, atlas) create the default names.
CREATE TABLE IF NOT EXISTS "public"."once_records" (
    scope        text        NOT NULL,
    key          text        NOT NULL,
    fingerprint  bytea       NOT NULL DEFAULT '\x',
    state        smallint    NOT NULL,
    owner        text,
    lease_until  timestamptz,
    outcome      bytea,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    completed_at timestamptz,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (scope, key),
    CONSTRAINT once_records_scope_len CHECK (octet_length(scope) BETWEEN 1 AND 255),
    CONSTRAINT once_records_key_len CHECK (octet_length(key) BETWEEN 1 AND 255),
    CONSTRAINT once_records_fingerprint_len CHECK (octet_length(fingerprint) <= 64),
    CONSTRAINT once_records_owner_len CHECK (octet_length(owner) <= 255),
    CONSTRAINT once_records_state CHECK (
        (state = 1 AND owner IS NOT NULL AND lease_until IS NOT NULL)
        OR (state = 2 AND outcome IS NOT NULL)
    )
);

CREATE INDEX IF NOT EXISTS "once_records_expires_at_idx" ON "public"."once_records" (expires_at);
