-- once: the held state (state 3) and listing.
--
--   * claimed_at is when a pending record was claimed (or taken over): the
--     age that listing filters by. The claim sets it; nothing indexes it.
--     Rows claimed before this migration have none (listed as of unknown
--     age).
--   * held_at, hold_until, held_code and held_message describe a held
--     record: since when, until when (a reconciler's lease is lease_until,
--     and owner its token), and the held error's code and message.
--   * once_records_held_idx indexes held_at on held rows only: its size is
--     the number of held keys, and the hot path never writes it (a claim
--     inserts held_at NULL, outside the index; a completion does not touch
--     it, so it stays a HOT update). Listing held keys reads it instead of
--     the table.
--
-- Adding nullable columns without a default does not rewrite the table;
-- the index starts empty.
ALTER TABLE "public"."once_records"
    ADD COLUMN IF NOT EXISTS claimed_at timestamptz,
    ADD COLUMN IF NOT EXISTS held_at timestamptz,
    ADD COLUMN IF NOT EXISTS hold_until timestamptz,
    ADD COLUMN IF NOT EXISTS held_code text,
    ADD COLUMN IF NOT EXISTS held_message text;

CREATE INDEX IF NOT EXISTS "once_records_held_idx" ON "public"."once_records" (held_at) WHERE held_at IS NOT NULL;
