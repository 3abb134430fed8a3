-- once: back to schema 001 (the sweeper's index on expires_at).
CREATE INDEX IF NOT EXISTS "once_records_expires_at_idx" ON "public"."once_records" (expires_at);

DROP INDEX IF EXISTS "public"."once_records_sweep_idx";

ALTER TABLE "public"."once_records"
    DROP COLUMN IF EXISTS sweep_after,
    ALTER COLUMN scope TYPE text COLLATE "default",
    ALTER COLUMN key TYPE text COLLATE "default",
    ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    ADD COLUMN IF NOT EXISTS completed_at timestamptz,
    RESET (fillfactor);
