-- once: back to schema 001 (the sweeper's index on expires_at).
CREATE INDEX IF NOT EXISTS "once_records_expires_at_idx" ON "public"."once_records" (expires_at);

DROP INDEX IF EXISTS "public"."once_records_sweep_idx";

ALTER TABLE "public"."once_records"
    DROP COLUMN IF EXISTS sweep_after,
    ALTER COLUMN scope TYPE text COLLATE "default",
    ALTER COLUMN key TYPE text COLLATE "default",
    ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    ADD COLUMN IF NOT EXISTS completed_at timestamptz,
    ADD CONSTRAINT once_records_scope_len CHECK (octet_length(scope) BETWEEN 1 AND 255),
    ADD CONSTRAINT once_records_key_len CHECK (octet_length(key) BETWEEN 1 AND 255),
    ADD CONSTRAINT once_records_fingerprint_len CHECK (octet_length(fingerprint) <= 64),
    ADD CONSTRAINT once_records_owner_len CHECK (octet_length(owner) <= 255),
    ADD CONSTRAINT once_records_state CHECK (
        (state = 1 AND owner IS NOT NULL AND lease_until IS NOT NULL)
        OR (state = 2 AND outcome IS NOT NULL)
    ),
    RESET (fillfactor);
