-- once: back to schema 003 (sweep_after and the sweeper's index on it).
-- Every row starts at -infinity, so the first sweeps visit each once and
-- move sweep_after of the live ones to their expiry. Adding the column
-- with a constant default does not rewrite the table; CREATE INDEX blocks
-- writes while it builds (see 002).
ALTER TABLE "public"."once_records"
    ADD COLUMN IF NOT EXISTS sweep_after timestamptz NOT NULL DEFAULT '-infinity';

ALTER TABLE "public"."once_records" ALTER COLUMN sweep_after DROP DEFAULT;

CREATE INDEX IF NOT EXISTS "once_records_sweep_idx" ON "public"."once_records" (sweep_after);
